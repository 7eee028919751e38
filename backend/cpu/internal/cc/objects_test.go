package cc

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// twoCandidates is a unit of two candidate kernels, each calling a helper
// of its own, beside the weak counter every kernel library shares.
const twoCandidates = `__attribute__((weak, visibility("default"))) unsigned long long xk_alloc_failures;
void a_u_c0_par(void** b, long t, long n) { float* x = b[0]; float* y = b[1]; for (int i = 0; i < 4; i++) y[i] = x[i] + 1.0f; }
void a_u_c0(void** b) { a_u_c0_par(b, 0, 1); }
void a_u_c1(void** b) { float* x = b[0]; float* y = b[1]; for (int i = 0; i < 4; i++) y[i] = x[i] * 3.0f; xk_alloc_failures++; }
`

// TestBuildObjectSharedAndRename builds a unit as an object and a
// library, then makes each candidate a final kernel by renaming: the
// renamed objects must link together (the other candidate's symbols are
// local, so the pair cannot clash) and compute what the candidates do.
func TestBuildObjectSharedAndRename(t *testing.T) {
	c := findOrSkip(t)
	ctx := context.Background()
	obj, so, err := c.BuildObjectShared(ctx, Source{Name: "a_u", Code: []byte(twoCandidates)})
	lib := loadBuilt(t, so, err)
	globals, err := GlobalSymbols(obj.Data)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a_u_c0", "a_u_c0_par", "a_u_c1", "xk_alloc_failures"}; !slices.Equal(globals, want) {
		t.Fatalf("global symbols %v, want %v", globals, want)
	}
	k0, err := c.Rename(ctx, obj, map[string]string{"a_u_c0": "k_0", "a_u_c0_par": "k_0_par"}, []string{"a_u_c1"})
	if err != nil {
		t.Fatal(err)
	}
	k1, err := c.Rename(ctx, obj, map[string]string{"a_u_c1": "k_1"}, []string{"a_u_c0", "a_u_c0_par"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		obj  Object
		want []string
	}{{k0, []string{"k_0", "k_0_par", "xk_alloc_failures"}}, {k1, []string{"k_1", "xk_alloc_failures"}}} {
		got, err := GlobalSymbols(tc.obj.Data)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("renamed object's global symbols %v, want %v", got, tc.want)
		}
	}
	final, err := c.Link(ctx, []Object{k0, k1})
	flib := loadBuilt(t, final, err)
	in, out, bufs := kernelBuffers(t)
	*in = [4]float32{1, 2, 3, 4}
	for _, pair := range [][2]string{{"a_u_c0", "k_0"}, {"a_u_c1", "k_1"}} {
		cand, err := lib.Sym(pair[0])
		if err != nil {
			t.Fatal(err)
		}
		Call(cand, bufs)
		want := *out
		*out = [4]float32{}
		fin, err := flib.Sym(pair[1])
		if err != nil {
			t.Fatal(err)
		}
		Call(fin, bufs)
		if *out != want {
			t.Errorf("%s: got %v, its candidate %s computes %v", pair[1], *out, pair[0], want)
		}
	}
}

// TestRenameRejects checks Rename's refusals: names that are not plain C
// identifiers (they reach objcopy's command line), a rename of a symbol
// the object does not define, and an object that is not one.
func TestRenameRejects(t *testing.T) {
	c := findOrSkip(t)
	ctx := context.Background()
	objs, err := c.Compile(ctx, []Source{{Name: "a_u", Code: []byte(twoCandidates)}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	obj := objs[0]
	for _, tc := range []struct {
		name   string
		obj    Object
		rename map[string]string
		local  []string
		want   string
	}{
		{"bad new name", obj, map[string]string{"a_u_c1": "k_1 --strip-all"}, nil, "plain C identifiers"},
		{"bad old name", obj, map[string]string{"a_u_c1=x": "k_1"}, nil, "plain C identifiers"},
		{"bad local name", obj, map[string]string{"a_u_c1": "k_1"}, []string{"-x"}, "plain C identifier"},
		{"absent symbol", obj, map[string]string{"a_u_c7": "k_7"}, nil, "does not define k_7"},
		{"not an object", Object{Name: "a_u", Data: []byte("garbage")}, map[string]string{"a_u_c1": "k_1"}, nil, "renaming symbols"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Rename(ctx, tc.obj, tc.rename, tc.local)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
