package httpapi

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"plantd/internal/jsondup"
	"plantd/plant"
)

// refuseDuplicateKeys answers 400 naming the key when a JSON body gives
// a key twice in one object, at any depth (encoding/json would take the
// last silently); true when there is none.
func refuseDuplicateKeys(c *gin.Context, body []byte) bool {
	var de *jsondup.Error
	if err := jsondup.Check(body); errors.As(err, &de) {
		fail(c, http.StatusBadRequest, plant.CodeBadBody, "duplicate key "+de.Path+" in the JSON body",
			FieldError{Field: de.Path, Message: "given more than once"})
		return false
	}
	return true
}
