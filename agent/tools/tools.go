// Package tools holds the tools the model can call: files in the workspace,
// shell commands judged by the safety policy, long-term memory and web pages.
//
// Each tool is a small struct holding its dependencies. Its Run method decodes
// the model's arguments strictly (unknown fields, wrong types and invalid JSON
// are errors) and returns errors worded for the model, which sees them as
// "Error: ..." results.
package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// decodeArgs decodes the model's arguments into the params struct v.
// Empty arguments count as an empty object, since models often send nothing
// for a call whose fields are all optional.
func decodeArgs(args json.RawMessage, v any) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return argsError(err, v)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("invalid arguments: unexpected data after the JSON object")
	}
	return nil
}

// argsError rewords a decoding error so that the model can fix its call.
func argsError(err error, v any) error {
	var (
		syntax  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("invalid arguments: not valid JSON at offset %d: %w", syntax.Offset, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("invalid arguments: the JSON ends too early")
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return fmt.Errorf("invalid arguments: must be a JSON object, not %s", article(typeErr.Value))
		}
		return fmt.Errorf("invalid arguments: %q must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type), article(typeErr.Value))
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("invalid arguments: unknown field %s; this tool takes: %s", name, strings.Join(fieldNames(v), ", "))
	}
	return fmt.Errorf("invalid arguments: %w", err)
}

// fieldNames lists the JSON names of the fields of the struct v points to.
func fieldNames(v any) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		names = append(names, name)
	}
	return names
}

// jsonKind names the JSON type a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// article turns the JSON value kinds of encoding/json errors ("number",
// "array", "number 1.5") into readable phrases.
func article(kind string) string {
	switch {
	case kind == "":
		return "something else"
	case strings.HasPrefix(kind, "a") || strings.HasPrefix(kind, "o"):
		return "an " + kind
	default:
		return "a " + kind
	}
}
