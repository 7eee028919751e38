package stablehlo

import "testing"

// TestProgramName: the module's @name wins; without one, or for a file
// that does not parse, the file name without its extension.
func TestProgramName(t *testing.T) {
	const main = `func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.tanh %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
`
	for _, tc := range []struct{ src, path, want string }{
		{"module @prog_mod {\n" + main + "}\n", "/x/renamed copy.mlir", "prog_mod"},
		{main, "/x/renamed copy.mlir", "renamed copy"},
		{"not stablehlo", "/x/q.txt", "q"},
	} {
		m, _ := Parse([]byte(tc.src), tc.path)
		if got := ProgramName(m, tc.path); got != tc.want {
			t.Errorf("ProgramName(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}
