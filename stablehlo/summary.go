package stablehlo

import (
	"fmt"
	"strings"
)

// Summary returns the first few values and the sum of t, enough to eyeball
// a result: "[0.13 0.0627 0.211 0.0609 ...] sum=64". Complex tensors show
// complex values and sum.
func (t *Tensor) Summary() string {
	if t.Type.DType.IsComplex() {
		return summarize(t.Type.NumElements(), t.Complex128At)
	}
	return summarize(t.Type.NumElements(), t.Float64At)
}

func summarize[T float64 | complex128](n int64, at func(int64) T) string {
	var sum T
	var first []string
	for i := int64(0); i < n; i++ {
		v := at(i)
		sum += v
		if i < 4 {
			first = append(first, fmt.Sprintf("%.6g", v))
		}
	}
	more := ""
	if n > 4 {
		more = " ..."
	}
	return fmt.Sprintf("[%s%s] sum=%.6g", strings.Join(first, " "), more, sum)
}
