package gomlx

// SPMD on host devices. The backend's devices (devices=N) are all the
// host, so an SPMD program over n of them is built as one program that
// computes every replica: each op is built once per replica (Builder.do),
// each parameter is taken once per replica, and a collective combines
// the replicas' values directly. The program is an ordinary StableHLO
// module, compiled and cached like any other; the replicas' results are
// what n devices running the program in lockstep would compute.

import (
	shlo "github.com/gomlx/go-xla/pkg/stablehlo"
	"github.com/gomlx/gomlx/backends"
)

// allReduceFns combine two replicas' values for AllReduce.
var allReduceFns = map[backends.ReduceOpType]binFn{
	backends.ReduceOpSum: shlo.Add, backends.ReduceOpProduct: shlo.Multiply,
	backends.ReduceOpMax: shlo.Maximum, backends.ReduceOpMin: shlo.Minimum,
}

// AllReduce implements backends.Builder: each replica gets the reduction
// of its group's values, combined in the group's order. Without groups,
// all replicas form one group; in a program that is not SPMD, the one
// replica reduces with itself alone.
func (b *Builder) AllReduce(inputs []backends.Op, kind backends.ReduceOpType, groups [][]int) ([]backends.Op, error) {
	return b.guard(backends.OpTypeAllReduce, func() []backends.Op {
		combine, ok := allReduceFns[kind]
		if !ok {
			fail("reduction %s is not supported", kind)
		}
		if len(groups) == 0 {
			groups = [][]int{iota(b.replicas)}
		}
		groupOf := make([]int, b.replicas)
		for r := range groupOf {
			groupOf[r] = -1
		}
		for g, members := range groups {
			if len(members) == 0 {
				fail("replica group %d is empty", g)
			}
			for _, r := range members {
				if r < 0 || r >= b.replicas {
					fail("replica %d in group %v: the program has %d replica(s)", r, members, b.replicas)
				}
				if groupOf[r] >= 0 {
					fail("replica %d is in more than one group", r)
				}
				groupOf[r] = g
			}
		}
		for r, g := range groupOf {
			if g < 0 {
				fail("replica %d is in no group %v", r, groups)
			}
		}
		out := make([]backends.Op, len(inputs))
		for i, x := range inputs {
			n := b.node1(x)
			if kind == backends.ReduceOpMax || kind == backends.ReduceOpMin {
				noComplex(backends.OpTypeReduceMax, n.vs[0])
			}
			// One reduction per group, shared by its members.
			reduced := make([]*shlo.Value, len(groups))
			for g, members := range groups {
				acc := n.vs[members[0]]
				for _, r := range members[1:] {
					acc = must(combine(acc, n.vs[r]))
				}
				reduced[g] = acc
			}
			vs := make([]*shlo.Value, b.replicas)
			for r := range vs {
				vs[r] = reduced[groupOf[r]]
			}
			out[i] = b.node(vs)
		}
		return out
	})
}
