package cpu

import (
	"unsafe"
)

// control runs control step s, the step at index pc, on the buffers ptr
// resolves, and returns the index of the step to run next. The plan was
// validated (validateControl), so buffers and targets are in range.
func (e *Executable) control(pc int, s Step, ptr func(int) unsafe.Pointer) int {
	switch s.Op {
	case stepCopy:
		if n := int(e.types[s.Bufs[0]].ByteSize()); n > 0 {
			copy(unsafe.Slice((*byte)(ptr(s.Bufs[1])), n), unsafe.Slice((*byte)(ptr(s.Bufs[0])), n))
		}
		return pc + 1
	case stepJump:
		return s.Targets[0]
	case stepBranch:
		p := ptr(s.Bufs[0])
		var k int64
		if e.types[s.Bufs[0]].DType.Size() == 1 {
			k = int64(*(*uint8)(p))
		} else {
			k = int64(*(*int32)(p))
		}
		if k < 0 || k >= int64(len(s.Targets)) {
			k = int64(len(s.Targets)) - 1
		}
		return s.Targets[k]
	}
	return len(e.plan.Steps) // not reached: validate rejects other ops
}
