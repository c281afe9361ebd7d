package httpapi

import "plantd/httpapi/apidoc"

// pageRoutes documents the gateway's own page (package web).
func pageRoutes() []apidoc.Route {
	html := func(desc, mt string) apidoc.Obj {
		return apidoc.Obj{"200": apidoc.Obj{"description": desc, "content": apidoc.Obj{mt: apidoc.Obj{"schema": apidoc.Str()}}}, "304": apidoc.Obj{"description": "not modified (If-None-Match)"}}
	}
	return []apidoc.Route{
		{Method: "get", Path: "/", Summary: "The gateway's own page (sign in with a token; it reads this API)", Open: true,
			Extra: html("the page", "text/html")},
		{Method: "get", Path: "/ui/{file}", Summary: "The page's files (/ui/{version}/...: cached for a year)", Open: true,
			Params: []apidoc.Obj{apidoc.Param("file", "path", "version and file path", apidoc.Str(), true)}, Extra: html("a file of the page", "*/*")},
	}
}
