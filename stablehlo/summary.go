package stablehlo

import (
	"fmt"
	"strings"
)

// Summary returns the first few values and the sum of t, enough to eyeball
// a result: "[0.13 0.0627 0.211 0.0609 ...] sum=64".
func (t *Tensor) Summary() string {
	n := t.Type.NumElements()
	var sum float64
	var first []string
	for i := int64(0); i < n; i++ {
		v := t.Float64At(i)
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
