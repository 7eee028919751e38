package cpu

import (
	"fmt"
	"regexp"
	"testing"
)

// configComment matches the comment naming a kernel's configuration.
var configComment = regexp.MustCompile(`(?m)^/\* .*; .* \*/$`)

// TestDotCandidatesCompileToDistinctCode checks that no two candidates of
// a dot kernel generate the same C (apart from the comment naming the
// configuration): such a pair costs the autotuner compile time for
// nothing. kc beyond the contracting size is where they used to repeat.
func TestDotCandidatesCompileToDistinctCode(t *testing.T) {
	micros := map[int]int{} // contracting size -> micro candidates, one thread
	for _, tc := range []struct{ k, threads int }{{64, 1}, {200, 1}, {1024, 1}, {64, 2}, {1024, 2}} {
		t.Run(fmt.Sprintf("K=%d/threads=%d", tc.k, tc.threads), func(t *testing.T) {
			text := fmt.Sprintf(`func.func @main(%%a: tensor<256x%dxf32>, %%b: tensor<%dx256xf32>) -> tensor<256x256xf32> {
  %%0 = stablehlo.dot_general %%a, %%b, contracting_dims = [1] x [0] : (tensor<256x%dxf32>, tensor<%dx256xf32>) -> tensor<256x256xf32>
  return %%0 : tensor<256x256xf32>
}
`, tc.k, tc.k, tc.k, tc.k)
			l := lowerText(t, text, "dot")
			k, err := newKernel(l, l.roots[0], tc.threads)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]string{}
			for _, cfg := range k.cands {
				if cfg.Name == routineConfig {
					continue // no generated code
				}
				body, err := k.body(cfg, "KERNEL_SYMBOL")
				if err != nil {
					t.Fatal(err)
				}
				code := configComment.ReplaceAllString(body, "")
				if prev, ok := seen[code]; ok {
					t.Errorf("candidates %s and %s generate the same code", prev, cfg)
				}
				seen[code] = cfg.String()
				if cfg.Name == "micro" && tc.threads == 1 {
					micros[tc.k]++
				}
			}
		})
	}
	// Only the repeats go: kc = 512 is a candidate of its own from K =
	// 257 on, kc = 256 from K = 129 on.
	if !(micros[64] < micros[200] && micros[200] < micros[1024]) {
		t.Errorf("micro candidates by contracting size: %v, want fewer for smaller K", micros)
	}
}
