package httpapi

// pageRoutes documents the gateway's own page (package web).
func pageRoutes() []route {
	html := func(desc, mt string) obj {
		return obj{"200": obj{"description": desc, "content": obj{mt: obj{"schema": str()}}}, "304": obj{"description": "not modified (If-None-Match)"}}
	}
	return []route{
		{method: "get", path: "/", summary: "The gateway's own page (sign in with a token; it reads this API)", open: true,
			extra: html("the page", "text/html")},
		{method: "get", path: "/ui/{file}", summary: "The page's files (/ui/{version}/...: cached for a year)", open: true,
			params: []obj{param("file", "path", "version and file path", str(), true)}, extra: html("a file of the page", "*/*")},
	}
}
