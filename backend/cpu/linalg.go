package cpu

import (
	"fmt"
	"strconv"

	"github.com/xlacache/xlacache/stablehlo"
)

// This file lowers the linear-algebra ops triangular_solve and cholesky,
// both kernel roots, as the interpreter does (stablehlo/trisolve.go,
// cholesky.go).

// genTriSolve implements triangular_solve as the interpreter does: f32
// and f64 as XLA:CPU (genTriSolveXLA), the 16-bit floats by forward or
// back substitution in the interpreter's order: intermediate values are
// kept in the compute type (f32 for 16-bit floats) in a scratch buffer and
// rounded to the result type when stored.
func genTriSolve(g *gen, op *stablehlo.Op) {
	a, b := op.Operands[0], op.Operands[1]
	r := op.Results[0]
	t := op.Attrs.TriSolve
	dt := r.Type.DType
	if dt == stablehlo.F32 || dt == stablehlo.F64 {
		genTriSolveXLA(g, op)
		return
	}
	ct := ctype(computeDT(dt))
	A, B := g.input(a), g.input(b)
	out := g.output(r)
	rank := a.Type.Rank()
	m := a.Type.Shape[rank-1]
	rows, cols := b.Type.Shape[rank-2], b.Type.Shape[rank-1]
	batches := a.Type.NumElements() / max(m*m, 1)
	if m == 0 {
		batches = b.Type.NumElements() / max(rows*cols, 1)
	}
	trans := t.TransposeA != "NO_TRANSPOSE"
	lowerEff := t.Lower != trans
	g.line("%s* X = (%s*)malloc(sizeof(%s) * %d + 8);", ct, ct, ct, rows*cols)
	g.line("if (!X) { XK_ALLOC_FAILED(); return; }")
	g.openBlock("for (int64_t bt = 0; bt < %d; bt++) {", batches)
	elem := func(i, j string) string {
		if trans {
			i, j = j, i
		}
		v := loadExpr(a.Type.DType, fmt.Sprintf("%s[bt*%d + (%s)*%d + (%s)]", A, m*m, i, m, j))
		if t.UnitDiagonal {
			return fmt.Sprintf("((%s) == (%s) ? (%s)1 : %s)", i, j, ct, v)
		}
		return v
	}
	bval := func(i, j string) string {
		return loadExpr(b.Type.DType, fmt.Sprintf("%s[bt*%d + (%s)*%d + (%s)]", B, rows*cols, i, cols, j))
	}
	ord := func(lowerFirst bool, v string) string {
		if lowerFirst {
			return v
		}
		return fmt.Sprintf("(%d - 1 - %s)", m, v)
	}
	if t.LeftSide {
		g.line("for (int64_t c = 0; c < %d; c++)", cols)
		g.line("for (int64_t s = 0; s < %d; s++) {", m)
		g.ind++
		g.line("const int64_t i = %s;", ord(lowerEff, "s"))
		g.line("%s acc = %s;", ct, bval("i", "c"))
		g.line("for (int64_t q = 0; q < s; q++) {")
		g.line("\tconst int64_t j = %s;", ord(lowerEff, "q"))
		g.line("\tacc = acc - (%s)(%s * X[j*%d + c]);", ct, elem("i", "j"), cols)
		g.line("}")
		g.line("X[i*%d + c] = acc / %s;", cols, elem("i", "i"))
		g.ind--
		g.line("}")
	} else {
		g.line("for (int64_t rr = 0; rr < %d; rr++)", rows)
		g.line("for (int64_t s = 0; s < %d; s++) {", m)
		g.ind++
		g.line("const int64_t j = %s;", ord(!lowerEff, "s"))
		g.line("%s acc = %s;", ct, bval("rr", "j"))
		g.line("for (int64_t q = 0; q < s; q++) {")
		g.line("\tconst int64_t i = %s;", ord(!lowerEff, "q"))
		g.line("\tacc = acc - (%s)(X[rr*%d + i] * %s);", ct, cols, elem("i", "j"))
		g.line("}")
		g.line("X[rr*%d + j] = acc / %s;", cols, elem("j", "j"))
		g.ind--
		g.line("}")
	}
	res := "X[e]"
	if isHalf(dt) {
		res = roundExpr(dt, res)
	}
	g.line("for (int64_t e = 0; e < %d; e++) %s[bt*%d + e] = %s;", rows*cols, out, rows*cols, storeExpr(dt, res))
	g.closeBlock()
	g.line("free(X);")
}

// genCholesky implements cholesky (§cholesky) as the interpreter does: per
// matrix, the Cholesky–Banachiewicz recurrence over the triangle named by
// lower, in the compute type (f32 for the 16-bit floats, so every step is
// rounded to f32 like the interpreter's), with NaN where a square root of
// a value that is not >= 0 would be taken. The other triangle is zero.
func genCholesky(g *gen, op *stablehlo.Op) {
	a, r := op.Operands[0], op.Results[0]
	dt := r.Type.DType
	ct := ctype(computeDT(dt))
	A, out := g.input(a), g.output(r)
	rank := a.Type.Rank()
	n := a.Type.Shape[rank-1]
	batches := int64(0)
	if n > 0 {
		batches = a.Type.NumElements() / (n * n)
	}
	// at(i, j) is the offset of L(i, j) (i >= j) in a matrix: the lower
	// triangle itself, or the upper one transposed.
	at := func(i, j string) string {
		if op.Attrs.Lower {
			return fmt.Sprintf("(%s)*%d + (%s)", i, n, j)
		}
		return fmt.Sprintf("(%s)*%d + (%s)", j, n, i)
	}
	sqrt := "sqrt"
	if ct == "float" {
		sqrt = "sqrtf"
	}
	g.line("%s* L = (%s*)malloc(sizeof(%s) * %d + 8);", ct, ct, ct, n*n)
	g.line("if (!L) { XK_ALLOC_FAILED(); return; }")
	g.openBlock("for (int64_t bt = 0; bt < %d; bt++) {", batches)
	g.line("for (int64_t e = 0; e < %d; e++) L[e] = 0;", n*n)
	g.line("for (int64_t i = 0; i < %d; i++)", n)
	g.line("for (int64_t j = 0; j <= i; j++) {")
	g.ind++
	g.line("%s s = %s;", ct, loadExpr(a.Type.DType, fmt.Sprintf("%s[bt*%d + %s]", A, n*n, at("i", "j"))))
	g.line("for (int64_t k = 0; k < j; k++) {")
	g.line("\tconst %s p = L[i*%d + k] * L[j*%d + k];", ct, n, n)
	g.line("\ts = s - p;")
	g.line("}")
	g.line("if (i == j) L[i*%d + i] = %s(s >= 0 ? s : (%s)NAN);", n, sqrt, ct)
	g.line("else L[i*%d + j] = s / L[j*%d + j];", n, n)
	g.ind--
	g.line("}")
	res := "L[i*" + strconv.FormatInt(n, 10) + " + j]"
	if isHalf(dt) {
		res = roundExpr(dt, res)
	}
	g.line("for (int64_t i = 0; i < %d; i++)", n)
	g.line("for (int64_t j = 0; j < %d; j++) %s[bt*%d + %s] = %s;", n, out, n*n, at("i", "j"), storeExpr(dt, res))
	g.closeBlock()
	g.line("free(L);")
}
