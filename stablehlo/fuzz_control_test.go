package stablehlo

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// controlFuzzProgram builds, from fuzz bytes, a program around one while,
// if, case, cholesky or Bessel op whose types (element types, shapes,
// region results, permutations of a loop's state) come from the input, so
// many are ill-typed: the verifier must reject those with an error, and
// every program it accepts must evaluate. Loops are bounded by a counter.
func controlFuzzProgram(fb *fuzzBytes) string {
	types := []string{"f32", "f64", "bf16", "f16", "i32", "i1"}
	ty := func() string {
		sh := fb.shape(2)
		var b strings.Builder
		b.WriteString("tensor<")
		for _, d := range sh {
			fmt.Fprintf(&b, "%dx", d)
		}
		b.WriteString(types[fb.next()%len(types)] + ">")
		return b.String()
	}
	kind := fb.next() % 5
	n := int(fb.small(1, 3))
	var argT []string
	var params []string
	for i := 0; i < n; i++ {
		argT = append(argT, ty())
		params = append(params, fmt.Sprintf("%%a%d: %s", i, argT[i]))
	}
	pick := func() int { return fb.next() % n }
	var body, resT string
	switch kind {
	case 0: // while: counter plus the arguments, returned permuted
		var inits, st, rets []string
		for i := 0; i < n; i++ {
			inits = append(inits, fmt.Sprintf("%%s%d = %%a%d", i, i))
			st = append(st, argT[i])
			rets = append(rets, fmt.Sprintf("%%s%d", (i+pick())%n)) // 0: in place
		}
		resT = "tensor<i32>"
		body = fmt.Sprintf(`  %%c0 = stablehlo.constant dense<0> : tensor<i32>
  %%lim = stablehlo.constant dense<%d> : tensor<i32>
  %%one = stablehlo.constant dense<1> : tensor<i32>
  %%w:%d = stablehlo.while(%%i = %%c0, %s) : tensor<i32>, %s
   cond {
    %%lt = stablehlo.compare LT, %%i, %%lim, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %%lt : tensor<i1>
  } do {
    %%i1 = stablehlo.add %%i, %%one : tensor<i32>
    stablehlo.return %%i1, %s : tensor<i32>, %s
  }
  %%r = stablehlo.add %%w#0, %%w#0 : tensor<i32>`, fb.small(-1, 5), n+1, strings.Join(inits, ", "), strings.Join(st, ", "),
			strings.Join(rets, ", "), strings.Join(st, ", "))
	case 1, 2: // if on a predicate argument, or case on a constant index
		k, sel, selT := 2, "%p", "tensor<i1>"
		name := "if"
		params = append(params, "%p: tensor<i1>")
		if fb.next()%2 == 1 {
			name, sel, selT = "case", "%k", "tensor<i32>"
			k = int(fb.small(1, 3))
			body = fmt.Sprintf("  %%k = stablehlo.constant dense<%d> : tensor<i32>\n", fb.small(-2, 6))
		}
		resT = argT[pick()]
		var br []string
		for j := 0; j < k; j++ {
			a := pick()
			br = append(br, fmt.Sprintf("    stablehlo.return %%a%d : %s", a, argT[a]))
		}
		body += fmt.Sprintf("  %%r = \"stablehlo.%s\"(%s) ({\n%s\n  }) : (%s) -> %s", name, sel, strings.Join(br, "\n  }, {\n"), selT, resT)
	case 3:
		resT = argT[0]
		body = fmt.Sprintf("  %%r = stablehlo.cholesky %%a0, lower = %v : %s", fb.next()%2 == 0, argT[0])
	default:
		resT = argT[0]
		body = fmt.Sprintf("  %%r = chlo.bessel_i%de %%a0 : %s -> %s", fb.next()%2, argT[0], argT[0])
	}
	return fmt.Sprintf("func.func @main(%s) -> %s {\n%s\n  return %%r : %s\n}\n", strings.Join(params, ", "), resT, body, resT)
}

// FuzzControlOps checks the type rules of while, if, case, cholesky and
// the Bessel functions against the interpreter: a program the verifier
// accepts evaluates without an internal error to results of the declared
// types.
func FuzzControlOps(f *testing.F) {
	for _, seed := range [][]byte{
		// The kind byte first (0 while, 1 if, 2 case, 3 cholesky, 4 Bessel),
		// then argument count, ranks, dims and types: both well- and
		// ill-typed programs of every kind.
		{0, 1, 1, 3, 0, 3},
		{0, 2, 1, 2, 0, 1, 2, 0, 1, 1, 4},
		{0, 2, 0, 0, 0, 2, 1, 2},
		{1, 2, 1, 2, 2, 1, 2, 2, 0, 1, 1, 0},
		{2, 1, 2, 2, 2, 1, 1, 3, 0, 0, 0},
		{2, 1, 0, 4, 1, 1, 0, 9},
		{3, 1, 2, 3, 3, 0, 1},
		{3, 1, 3, 2, 2, 2, 3, 0},
		{3, 1, 2, 2, 3, 4},
		{4, 1, 1, 3, 2, 0},
		{4, 1, 2, 1, 2, 1, 1},
		{4, 1, 1, 2, 4, 1},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fb := &fuzzBytes{b: data}
		src := controlFuzzProgram(fb)
		m, err := Parse([]byte(src), "fuzz.mlir")
		if err != nil {
			return // rejected
		}
		fn := m.Main()
		in := make([]*Tensor, len(fn.Args))
		for i, a := range fn.Args {
			in[i] = NewTensor(a.Type)
			for j := range in[i].Data {
				in[i].Data[j] = byte(fb.next())
			}
			if a.Type.DType == I1 {
				for j := range in[i].Data {
					in[i].Data[j] &= 1
				}
			}
		}
		out, err := Eval(m, "main", in)
		if errors.Is(err, ErrInternal) || err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		for i, o := range out {
			if !o.Type.Equal(fn.ResultTypes[i]) {
				t.Fatalf("result %d has type %s, declared %s\n%s", i, o.Type, fn.ResultTypes[i], src)
			}
		}
	})
}
