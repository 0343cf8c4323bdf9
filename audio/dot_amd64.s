#include "textflag.h"

// func dotSSE(c, x []float32) float32
// Σ c[i]·x[i] over len(c) (x is at least as long: the Go caller checks). SSE (every amd64):
// four 4-lane accumulators over 16 taps a step, then 4 a step, then the scalar tail.
TEXT ·dotSSE(SB), NOSPLIT, $0-52
	MOVQ c_base+0(FP), SI
	MOVQ c_len+8(FP), CX
	MOVQ x_base+24(FP), DI
	XORPS X0, X0
	XORPS X1, X1
	XORPS X2, X2
	XORPS X3, X3
	CMPQ CX, $16
	JLT  by4

by16:
	MOVUPS 0(SI), X4
	MOVUPS 16(SI), X5
	MOVUPS 32(SI), X6
	MOVUPS 48(SI), X7
	MOVUPS 0(DI), X8
	MOVUPS 16(DI), X9
	MOVUPS 32(DI), X10
	MOVUPS 48(DI), X11
	MULPS  X8, X4
	MULPS  X9, X5
	MULPS  X10, X6
	MULPS  X11, X7
	ADDPS  X4, X0
	ADDPS  X5, X1
	ADDPS  X6, X2
	ADDPS  X7, X3
	ADDQ   $64, SI
	ADDQ   $64, DI
	SUBQ   $16, CX
	CMPQ   CX, $16
	JGE    by16

by4:
	CMPQ   CX, $4
	JLT    reduce
	MOVUPS 0(SI), X4
	MOVUPS 0(DI), X8
	MULPS  X8, X4
	ADDPS  X4, X0
	ADDQ   $16, SI
	ADDQ   $16, DI
	SUBQ   $4, CX
	JMP    by4

reduce:
	ADDPS  X1, X0
	ADDPS  X3, X2
	ADDPS  X2, X0
	MOVAPS X0, X1
	SHUFPS $0x4E, X1, X1 // lanes 2 3 0 1
	ADDPS  X1, X0
	MOVAPS X0, X1
	SHUFPS $0xB1, X1, X1 // lanes 1 0 3 2
	ADDPS  X1, X0        // lane 0: the sum of the four

by1:
	TESTQ  CX, CX
	JEQ    done
	MOVSS  0(SI), X4
	MULSS  0(DI), X4
	ADDSS  X4, X0
	ADDQ   $4, SI
	ADDQ   $4, DI
	DECQ   CX
	JMP    by1

done:
	MOVSS X0, ret+48(FP)
	RET

// func dotAVX2(c, x []float32) float32
// dot in AVX2 with FMA (where the CPU has both): four 8-lane accumulators over 32 taps a
// step, then 8 a step, then the scalar tail.
TEXT ·dotAVX2(SB), NOSPLIT, $0-52
	MOVQ   c_base+0(FP), SI
	MOVQ   c_len+8(FP), CX
	MOVQ   x_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	CMPQ   CX, $32
	JLT    avx8

avx32:
	VMOVUPS     0(SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS 0(DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	CMPQ        CX, $32
	JGE         avx32

avx8:
	CMPQ        CX, $8
	JLT         avxreduce
	VMOVUPS     0(SI), Y4
	VFMADD231PS 0(DI), Y4, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         avx8

avxreduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VPERMILPS    $0x4E, X0, X1
	VADDPS       X1, X0, X0
	VPERMILPS    $0xB1, X0, X1
	VADDPS       X1, X0, X0

avx1:
	TESTQ       CX, CX
	JEQ         avxdone
	VMOVSS      0(SI), X4
	VFMADD231SS 0(DI), X4, X0
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         avx1

avxdone:
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET
