package jsonenc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// DecodeStrict decodes exactly one JSON value into v: unknown members and
// trailing data are errors.
func DecodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}
