// Package compilerbench holds one benchmark: the same StableHLO programs
// through xlacache's cpu backend (untuned and tuned), XLA:CPU (a real PJRT
// plugin loaded from Go through go-xla) and IREE (iree-base-compiler and
// iree-base-runtime, llvm-cpu, driven from its Python API), at 1 and 2
// threads, with every output checked elementwise against a reference; and
// GoMLX's MLP and transformer training steps through GoMLX itself, on its
// xla backend and on xlacache's (gomlx_test.go). Each cell runs in five
// child processes, in rounds over a program's cells, and the table shows
// the medians over them (-compilerbench.rounds).
//
//	go test -run '^$' -bench Compilers -benchtime 1x -timeout 2h ./internal/compilerbench
//
// adds -update to rewrite the table in docs/cpu.md and the summary in the
// README. The package has no code outside its tests: plain `go test`
// compiles it and runs only cheap unit tests.
package compilerbench
