package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"plantd/httpapi/apidoc"
	"plantd/plant"
)

// contentTypeProblem is the media type of RFC 9457 problem details.
const contentTypeProblem = apidoc.ProblemJSON

// FieldError names one invalid parameter or body field: package plant's,
// under the name the handlers (oauth.go among them) use.
type FieldError = plant.FieldError

// problem builds the problem document (package plant's) for the request.
func problem(c *gin.Context, status int, code, detail string, errs ...FieldError) plant.Problem {
	p := plant.NewProblem(status, code, detail, c.Request.URL.RequestURI())
	p.RequestID = c.GetString(ctxRequestID)
	p.Errors = errs
	return p
}

// writeProblem writes p and aborts the request.
func writeProblem(c *gin.Context, p plant.Problem) {
	// A problem holds strings, integers and booleans only: encoding it
	// cannot fail (invalid UTF-8 is replaced, not refused).
	b, _ := json.Marshal(p)
	c.Header("Content-Length", strconv.Itoa(len(b)))
	c.Header("Cache-Control", "no-store")
	c.Data(p.Status, contentTypeProblem, b)
	c.Abort()
}

// fail answers with a problem.
func fail(c *gin.Context, status int, code, detail string, errs ...FieldError) {
	writeProblem(c, problem(c, status, code, detail, errs...))
}

// badParam answers 400 naming the parameter.
func badParam(c *gin.Context, name, msg string) {
	fail(c, http.StatusBadRequest, plant.CodeBadParameter, "invalid parameter "+name+": "+msg, FieldError{Field: name, Message: msg})
}
