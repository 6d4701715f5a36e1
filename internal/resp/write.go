package resp

import (
	"fmt"
	"strconv"
)

// AppendArray appends the header of an array of n elements, the frame of
// every command.
func AppendArray(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// AppendString appends s as a bulk string.
func AppendString(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendBytes appends p as a bulk string.
func AppendBytes(b []byte, p []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(p)), 10)
	b = append(b, '\r', '\n')
	b = append(b, p...)
	return append(b, '\r', '\n')
}

// AppendInt appends the decimal form of i as a bulk string.
func AppendInt(b []byte, i int64) []byte {
	var scratch [20]byte
	return AppendBytes(b, strconv.AppendInt(scratch[:0], i, 10))
}

// AppendArgText appends to dst the text the server receives for the
// command argument arg, without the bulk-string frame: strings and byte
// slices as they are, the integer types in decimal, float64 and float32
// in the shortest form that reads back as the same value ('g' format, so
// 1e+21 rather than 21 digits), and bool as 1 or 0. Any other type is
// refused with an *ArgError and dst is returned unchanged, so that nothing
// ambiguous is sent to the server.
//
// It is the one place an argument becomes text: AppendArg and CheckArg
// encode and check with it, and whoever needs an argument's text (the
// keys of a command, to route it or to invalidate a near-cache) reads it
// here, so the key found is the key written.
func AppendArgText(dst []byte, arg any) ([]byte, error) {
	switch v := arg.(type) {
	case string:
		return append(dst, v...), nil
	case []byte:
		return append(dst, v...), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int16:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int8:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case uint:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint64:
		return strconv.AppendUint(dst, v, 10), nil
	case uint32:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint16:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint8:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case float64:
		return strconv.AppendFloat(dst, v, 'g', -1, 64), nil
	case float32:
		return strconv.AppendFloat(dst, float64(v), 'g', -1, 32), nil
	case bool:
		if v {
			return append(dst, '1'), nil
		}
		return append(dst, '0'), nil
	default:
		return dst, &ArgError{Type: typeName(arg)}
	}
}

// ArgText returns the text AppendArgText appends for arg; ok is false,
// and the text empty, for a type it refuses. A string is returned as it
// is, without a copy.
func ArgText(arg any) (text string, ok bool) {
	switch v := arg.(type) {
	case string:
		return v, true
	case []byte:
		return string(v), true
	}
	var scratch [numberSize]byte
	b, err := AppendArgText(scratch[:0], arg)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// numberSize holds the text of any number AppendArgText writes: 20 bytes
// for the integers, 24 for the longest float64 (-2.2250738585072014e-308).
const numberSize = 32

// AppendArg appends one command argument, as a bulk string of the text
// AppendArgText gives it, of any of the types a caller of a generic
// command may pass: string, []byte, the integer types, float64, float32
// and bool (as 1 or 0). Other types are refused with an *ArgError and b is
// returned unchanged. Strings, byte slices and numbers are encoded without
// allocating beyond b's growth.
func AppendArg(b []byte, arg any) ([]byte, error) {
	switch v := arg.(type) {
	case string: // framed directly: a value is not copied twice
		return AppendString(b, v), nil
	case []byte:
		return AppendBytes(b, v), nil
	}
	var scratch [numberSize]byte
	text, err := AppendArgText(scratch[:0], arg)
	if err != nil {
		return b, err
	}
	return AppendBytes(b, text), nil
}

// CheckArg reports, without encoding anything, the error AppendArg would
// return for arg.
func CheckArg(arg any) error {
	switch arg.(type) {
	case string, []byte:
		return nil
	}
	var scratch [numberSize]byte
	_, err := AppendArgText(scratch[:0], arg)
	return err
}

// ArgError reports a command argument of a type AppendArg does not encode.
type ArgError struct {
	Type string // the Go type of the argument, never its value
}

// Error names the argument's Go type, never its value.
func (e *ArgError) Error() string {
	return "unsupported argument type " + e.Type
}

func typeName(v any) string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprintf("%T", v)
}
