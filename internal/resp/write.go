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

// AppendArg appends one command argument of any of the types a caller of
// a generic command may pass: string, []byte, the integer types, float64,
// float32 and bool (as 1 or 0). Other types are refused with an error so
// that nothing ambiguous is sent to the server.
func AppendArg(b []byte, arg any) ([]byte, error) {
	switch v := arg.(type) {
	case string:
		return AppendString(b, v), nil
	case []byte:
		return AppendBytes(b, v), nil
	case int:
		return AppendInt(b, int64(v)), nil
	case int64:
		return AppendInt(b, v), nil
	case int32:
		return AppendInt(b, int64(v)), nil
	case int16:
		return AppendInt(b, int64(v)), nil
	case int8:
		return AppendInt(b, int64(v)), nil
	case uint:
		return AppendString(b, strconv.FormatUint(uint64(v), 10)), nil
	case uint64:
		return AppendString(b, strconv.FormatUint(v, 10)), nil
	case uint32:
		return AppendInt(b, int64(v)), nil
	case uint16:
		return AppendInt(b, int64(v)), nil
	case uint8:
		return AppendInt(b, int64(v)), nil
	case float64:
		return AppendString(b, strconv.FormatFloat(v, 'g', -1, 64)), nil
	case float32:
		return AppendString(b, strconv.FormatFloat(float64(v), 'g', -1, 32)), nil
	case bool:
		if v {
			return AppendString(b, "1"), nil
		}
		return AppendString(b, "0"), nil
	default:
		return b, &ArgError{Type: typeName(arg)}
	}
}

// CheckArg reports, without encoding anything, the error AppendArg would
// return for arg.
func CheckArg(arg any) error {
	switch arg.(type) {
	case string, []byte, int, int64, int32, int16, int8, uint, uint64, uint32, uint16, uint8, float64, float32, bool:
		return nil
	}
	return &ArgError{Type: typeName(arg)}
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
