package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"

	"github.com/natterchat/natter/persist"
)

// maxJSONBody is the size limit of every JSON request body (uploads have their own).
const maxJSONBody = 1 << 20

// encodedJSON is an answer already encoded, which writeJSON writes as it is: encoding/json
// would check and compact again the output of every MarshalJSON inside it.
type encodedJSON []byte

// messageAndEvent is the answer {"event", "message"} of a create, encoded once: the event's
// payload (which holds the message) is written as the event was encoded, not checked again.
func messageAndEvent(m persist.Message, ev persist.Event) any {
	msg, err := json.Marshal(m)
	if err != nil {
		return map[string]any{"message": m, "event": ev}
	}
	event, err := ev.MarshalJSON()
	if err != nil {
		return map[string]any{"message": m, "event": ev}
	}
	out := make(encodedJSON, 0, len(msg)+len(event)+24)
	out = append(append(append(out, `{"event":`...), event...), `,"message":`...)
	return append(append(out, msg...), '}')
}

// writeJSON is the one writer of successful JSON responses.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var body []byte
	var err error
	if raw, ok := v.(encodedJSON); ok {
		body = raw
	} else {
		body, err = json.Marshal(v)
	}
	if err != nil {
		// Our own types always marshal; reaching this is a programming error.
		status = http.StatusInternalServerError
		body = []byte(`{"error":"something went wrong on our side; it has been logged","code":"internal"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// writeAppended writes a successful JSON answer that appendBody appends to a buffer: the
// listings' hand-written encoders (persist/listjson.go). The buffer is reused from request to
// request: the channel list of a large workspace is hundreds of kilobytes, which the encoder
// would otherwise grow by doubling and the garbage collector then reclaim, on every page open.
func writeAppended(w http.ResponseWriter, status int, appendBody func([]byte) []byte) {
	bp := answerBuffers.Get().(*[]byte)
	body := append(appendBody((*bp)[:0]), '\n')
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body) // a ResponseWriter keeps nothing of what it is given
	if cap(body) <= maxPooledAnswer {
		*bp = body
		answerBuffers.Put(bp)
	}
}

// maxPooledAnswer bounds the buffers writeAppended keeps: a rare huge answer is not held.
const maxPooledAnswer = 4 << 20

var answerBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// decodeJSON reads exactly one JSON value of at most 1 MiB into dst. Codes: body_too_large,
// invalid_json (malformed, wrong field types, empty, or trailing values), invalid_request (a
// string holding invalid UTF-8 or NUL, see checkJSONText).
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		return jsonError(err)
	}
	return decodeJSONBytes(body, dst)
}

// decodeJSONBytes is decodeJSON on a body already read.
func decodeJSONBytes(body []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return persist.Errorf(persist.CodeInvalidJSON, "the body must hold exactly one JSON value")
	}
	return checkJSONText(body)
}

// decodeOptionalJSON is decodeJSON for endpoints whose body may be left out: no body at all
// leaves dst unchanged.
func decodeOptionalJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	if r.ContentLength == 0 {
		return nil
	}
	return decodeJSON(w, r, dst)
}

func jsonError(err error) error {
	var tooLarge *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooLarge):
		return persist.Errorf(persist.CodeBodyTooLarge, "the body is larger than %d bytes", maxJSONBody)
	case errors.Is(err, io.EOF):
		return persist.Errorf(persist.CodeInvalidJSON, "the body must be a JSON object")
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			return persist.Errorf(persist.CodeInvalidJSON, "field %s must be a %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()))
		}
		return persist.Errorf(persist.CodeInvalidJSON, "the body must be a JSON object")
	default:
		return persist.Errorf(persist.CodeInvalidJSON, "the body is not valid JSON")
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	default:
		return "number"
	}
}

// requireJSONContent refuses bodies that are not declared as JSON, for the sign-in endpoints
// that must not be reachable by a cross-site form post. Codes: unsupported_media_type.
func requireJSONContent(r *http.Request) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return persist.Errorf(persist.CodeUnsupportedMediaType, "Content-Type must be application/json")
	}
	return nil
}

// writeNoContent answers 204 with no body, for deletions.
func writeNoContent(w http.ResponseWriter) {
	w.WriteHeader(http.StatusNoContent)
}
