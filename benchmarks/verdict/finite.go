package verdict

import (
	"math"
	"reflect"
	"time"
)

// Finite returns a deep copy of r whose NaN and infinite numbers are 0
// (JSON can hold neither), or r itself when it has none.
func (r *Report) Finite() *Report {
	if !hasNonFinite(reflect.ValueOf(r).Elem()) {
		return r
	}
	cp := reflect.New(reflect.TypeFor[Report]())
	copyFinite(cp.Elem(), reflect.ValueOf(r).Elem())
	return cp.Interface().(*Report)
}

func hasNonFinite(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		return math.IsNaN(f) || math.IsInf(f, 0)
	case reflect.Struct:
		for i := range v.NumField() {
			if hasNonFinite(v.Field(i)) {
				return true
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if hasNonFinite(v.Index(i)) {
				return true
			}
		}
	case reflect.Pointer:
		return !v.IsNil() && hasNonFinite(v.Elem())
	}
	return false
}

// copyFinite copies src into dst (settable, same type), replacing
// non-finite floats by 0 and copying slices and pointers, so that r is
// left as it was.
func copyFinite(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Float32, reflect.Float64:
		f := src.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			f = 0
		}
		dst.SetFloat(f)
	case reflect.Struct:
		if src.Type() == reflect.TypeFor[time.Time]() {
			dst.Set(src)
			return
		}
		for i := range src.NumField() {
			copyFinite(dst.Field(i), src.Field(i))
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			copyFinite(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		copyFinite(p.Elem(), src.Elem())
		dst.Set(p)
	default:
		dst.Set(src)
	}
}
