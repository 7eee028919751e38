// rt.h declares the runtime routines: kernels compiled into the Go binary
// (by cgo, at go build time) rather than generated and compiled per
// program. They have the generated kernels' ABI (thread.go in package
// cpu): void f(void** bufs) and void f_par(void** bufs, int64_t t,
// int64_t n), bufs being the inputs, then a parameter block (a constant
// int64 buffer of the plan), then the outputs.
#include <stdint.h>

// The gemm parameter block: C[b][m][n] (contiguous) = A[b][m][k] x
// B[b][k][n], A's element (i, p) of batch matrix bi at
// bi*SAB + i*SAM + p*SAK, B's (p, j) at bi*SBB + p*SBK + j*SBN.
enum { RT_B, RT_M, RT_K, RT_N, RT_SAB, RT_SAM, RT_SAK, RT_SBB, RT_SBK, RT_SBN, RT_GEMM_PARAMS };

// The convolution parameter block: RT_CNS spatial dimensions (1 to
// RT_MAXS), the batch size, input and output features, the input's
// batch and feature strides, the kernel's input- and output-feature
// strides, the output's batch and feature strides, then RT_CPS values
// per spatial dimension (RT_CSP + s*RT_CPS + RT_ISIZE, ...). Padding
// low may be negative; reversal is 0 or 1.
enum {
	RT_CNS, RT_CN, RT_CC, RT_CF, RT_CIB, RT_CIF, RT_CKI, RT_CKO, RT_COB, RT_COF,
	RT_CSP // first spatial value
};
enum { RT_ISIZE, RT_ISTRIDE, RT_KSIZE, RT_KSTRIDE, RT_OSIZE, RT_OSTRIDE, RT_CSTRIDE, RT_PADLO, RT_DIL, RT_REV, RT_CPS };
#define RT_MAXS 3
#define RT_CONV_PARAMS (RT_CSP + RT_MAXS * RT_CPS)

// The pooling parameter block (reduce_window by maximum or minimum over
// a window the innermost dimension passes through, as NHWC pooling is):
// the rank (2 to RT_POOL_MAXD + 1), the op (0 maximum, 1 minimum), swap
// (1: the region computes op(element, accumulator), 0: op(accumulator,
// element)), the innermost size, then RT_PPD values per leading
// dimension (RT_PDIM + d*RT_PPD + RT_POUT, ...). Padding low may be
// negative. bufs: the operand, the init value (one element), the block,
// the result; both row-major and contiguous.
enum { RT_PRANK, RT_POP, RT_PSWAP, RT_PC, RT_PDIM };
enum { RT_POUT, RT_PIN, RT_PWIN, RT_PSTRIDE, RT_PWDIL, RT_PBDIL, RT_PPADLO, RT_PPD };
#define RT_POOL_MAXD 5
#define RT_POOL_PARAMS (RT_PDIM + RT_POOL_MAXD * RT_PPD)

void xk_rt_gemm_f32(void** bufs);
void xk_rt_gemm_f32_par(void** bufs, int64_t t, int64_t n);
void xk_rt_gemm_f64(void** bufs);
void xk_rt_gemm_f64_par(void** bufs, int64_t t, int64_t n);
void xk_rt_conv_f32(void** bufs);
void xk_rt_conv_f32_par(void** bufs, int64_t t, int64_t n);
void xk_rt_conv_f64(void** bufs);
void xk_rt_conv_f64_par(void** bufs, int64_t t, int64_t n);
// The Winograd F(2x2, 3x3) convolution, for a conv parameter block with
// two spatial dimensions, a 3x3 window, unit strides and no dilation.
void xk_rt_wino_f32(void** bufs);
void xk_rt_wino_f32_par(void** bufs, int64_t t, int64_t n);
void xk_rt_wino_f64(void** bufs);
void xk_rt_wino_f64_par(void** bufs, int64_t t, int64_t n);

// xk_rt_force_naive, set by tests only, makes the routines take the path
// they take when allocating scratch fails.
extern int xk_rt_force_naive;

// xk_rt_force_generic, set by tests only, makes the routines run their
// variant for any CPU where the AVX2 one would run.
extern int xk_rt_force_generic;

// xk_rt_gemm_variant says which compiled variant runs on this CPU
// ("avx2" or "generic").
const char* xk_rt_gemm_variant(void);
// xk_rt_avx2 reports whether the routines run their AVX2 variants.
int xk_rt_avx2(void);
void xk_rt_pool_f32(void** bufs);
void xk_rt_pool_f32_par(void** bufs, int64_t t, int64_t n);
void xk_rt_pool_f64(void** bufs);
void xk_rt_pool_f64_par(void** bufs, int64_t t, int64_t n);
