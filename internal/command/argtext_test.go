package command_test

import (
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/redisx-go/kit/internal/command"
	"github.com/redisx-go/kit/internal/resp"
)

// argTypes holds a value of every type resp.AppendArg accepts, with the
// text the server receives for it.
var argTypes = []struct {
	arg  any
	text string
}{
	{"k", "k"},
	{"", ""},
	{[]byte("b\x00"), "b\x00"},
	{int(-7), "-7"},
	{int64(math.MinInt64), "-9223372036854775808"},
	{int32(-32), "-32"},
	{int16(-300), "-300"},
	{int8(7), "7"},
	{int8(-128), "-128"},
	{uint(12), "12"},
	{uint64(math.MaxUint64), "18446744073709551615"},
	{uint32(math.MaxUint32), "4294967295"},
	{uint16(65535), "65535"},
	{uint8(255), "255"},
	{1.5, "1.5"},
	{1e21, "1e+21"},
	{float32(0.1), "0.1"},
	{true, "1"},
	{false, "0"},
}

// TestArgTextIsWhatAppendArgSends: for every type AppendArg encodes, the
// text a command's keys are read as (Arg, Keys), ArgText and
// AppendArgText is the payload of the bulk string AppendArg sends, so the
// key a near-cache invalidates or a cluster routes is the key written.
func TestArgTextIsWhatAppendArgSends(t *testing.T) {
	for _, tt := range argTypes {
		frame, err := resp.AppendArg(nil, tt.arg)
		if err != nil {
			t.Errorf("AppendArg(%T) error: %v", tt.arg, err)
			continue
		}
		if want := "$" + strconv.Itoa(len(tt.text)) + "\r\n" + tt.text + "\r\n"; string(frame) != want {
			t.Errorf("AppendArg(%T %v) = %q, want %q", tt.arg, tt.arg, frame, want)
		}
		if got, err := resp.AppendArgText([]byte("p:"), tt.arg); err != nil || string(got) != "p:"+tt.text {
			t.Errorf("AppendArgText(%T %v) = %q, %v; want %q, nil", tt.arg, tt.arg, got, err, "p:"+tt.text)
		}
		if got, ok := resp.ArgText(tt.arg); !ok || got != tt.text {
			t.Errorf("ArgText(%T %v) = %q, %v; want %q, true", tt.arg, tt.arg, got, ok, tt.text)
		}
		if err := resp.CheckArg(tt.arg); err != nil {
			t.Errorf("CheckArg(%T) = %v, want nil", tt.arg, err)
		}
		if got := command.Arg([]any{"SET", tt.arg}, 1); got != tt.text {
			t.Errorf("Arg(SET %T %v) = %q, want %q", tt.arg, tt.arg, got, tt.text)
		}
		keys, _, ok := command.Keys([]any{"SET", tt.arg, "v"})
		if !ok || !slices.Equal(keys, []string{tt.text}) {
			t.Errorf("Keys(SET %T %v v) = %q, %v; want [%q], true", tt.arg, tt.arg, keys, ok, tt.text)
		}
	}
}

// TestKeysReadsANumericKeyCountOfAnyType: EVAL's numkeys is read from
// the text sent, whatever integer type carries it.
func TestKeysReadsANumericKeyCountOfAnyType(t *testing.T) {
	for _, n := range []any{int8(2), uint8(2), int16(2), uint16(2), float64(2), "2"} {
		keys, _, ok := command.Keys([]any{"EVAL", "return 1", n, "a", "b", "argv"})
		if !ok || !slices.Equal(keys, []string{"a", "b"}) {
			t.Errorf("Keys(EVAL script %T(2) a b argv) = %q, %v; want [a b], true", n, keys, ok)
		}
	}
}

// TestArgTextRefusesWhatAppendArgRefuses: a type AppendArg refuses has no
// text anywhere.
func TestArgTextRefusesWhatAppendArgRefuses(t *testing.T) {
	for _, arg := range []any{nil, struct{}{}, complex(1, 2), []string{"k"}, new(int)} {
		if _, err := resp.AppendArg(nil, arg); err == nil {
			t.Errorf("AppendArg(%T) = nil error, want one", arg)
		}
		if got, ok := resp.ArgText(arg); ok || got != "" {
			t.Errorf("ArgText(%T) = %q, %v; want \"\", false", arg, got, ok)
		}
		if got := command.Arg([]any{"SET", arg}, 1); got != "" {
			t.Errorf("Arg(SET %T) = %q, want \"\"", arg, got)
		}
	}
}
