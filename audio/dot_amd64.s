#include "textflag.h"

// func dot4SSE(c0, c1, c2, c3, x0, x1, x2, x3 *float32, n int, out *[4]float32)
// out[k] = Σ ck[i]·xk[i], i < n, for four independent pairs, each summed exactly as dotGo sums
// (bit for bit): one 4-lane accumulator per pair, lane j holding dotGo's s_j (taps i ≡ j mod 4,
// in order), the tail added to lane 0, then (s0+s1)+(s2+s3). Four pairs at once hide the add
// latency that one chain of adds per lane would wait on.
TEXT ·dot4SSE(SB), NOSPLIT, $0-80
	MOVQ c0+0(FP), AX
	MOVQ c1+8(FP), BX
	MOVQ c2+16(FP), CX
	MOVQ c3+24(FP), DX
	MOVQ x0+32(FP), SI
	MOVQ x1+40(FP), DI
	MOVQ x2+48(FP), R8
	MOVQ x3+56(FP), R9
	MOVQ n+64(FP), R10
	XORPS X0, X0
	XORPS X1, X1
	XORPS X2, X2
	XORPS X3, X3
	MOVQ  R10, R11
	ANDQ  $-4, R11
	SHLQ  $2, R11  // bytes in whole groups of 4
	SHLQ  $2, R10  // bytes in all
	XORQ  R12, R12 // byte offset
	CMPQ  R12, R11
	JGE   tail

by4:
	MOVUPS (AX)(R12*1), X4
	MOVUPS (SI)(R12*1), X8
	MULPS  X8, X4
	ADDPS  X4, X0
	MOVUPS (BX)(R12*1), X5
	MOVUPS (DI)(R12*1), X9
	MULPS  X9, X5
	ADDPS  X5, X1
	MOVUPS (CX)(R12*1), X6
	MOVUPS (R8)(R12*1), X10
	MULPS  X10, X6
	ADDPS  X6, X2
	MOVUPS (DX)(R12*1), X7
	MOVUPS (R9)(R12*1), X11
	MULPS  X11, X7
	ADDPS  X7, X3
	ADDQ   $16, R12
	CMPQ   R12, R11
	JLT    by4

tail:
	CMPQ  R12, R10
	JGE   reduce
	MOVSS (AX)(R12*1), X4
	MULSS (SI)(R12*1), X4
	ADDSS X4, X0
	MOVSS (BX)(R12*1), X5
	MULSS (DI)(R12*1), X5
	ADDSS X5, X1
	MOVSS (CX)(R12*1), X6
	MULSS (R8)(R12*1), X6
	ADDSS X6, X2
	MOVSS (DX)(R12*1), X7
	MULSS (R9)(R12*1), X7
	ADDSS X7, X3
	ADDQ  $4, R12
	JMP   tail

reduce:
	MOVQ   out+72(FP), R13
	MOVAPS X0, X4
	SHUFPS $0xB1, X4, X4 // s1 s0 s3 s2
	ADDPS  X4, X0        // s0+s1 . s2+s3 .
	MOVAPS X0, X4
	SHUFPS $0x4E, X4, X4 // s2+s3 . s0+s1 .
	ADDSS  X4, X0        // (s0+s1)+(s2+s3)
	MOVSS  X0, 0(R13)
	MOVAPS X1, X4
	SHUFPS $0xB1, X4, X4
	ADDPS  X4, X1
	MOVAPS X1, X4
	SHUFPS $0x4E, X4, X4
	ADDSS  X4, X1
	MOVSS  X1, 4(R13)
	MOVAPS X2, X4
	SHUFPS $0xB1, X4, X4
	ADDPS  X4, X2
	MOVAPS X2, X4
	SHUFPS $0x4E, X4, X4
	ADDSS  X4, X2
	MOVSS  X2, 8(R13)
	MOVAPS X3, X4
	SHUFPS $0xB1, X4, X4
	ADDPS  X4, X3
	MOVAPS X3, X4
	SHUFPS $0x4E, X4, X4
	ADDSS  X4, X3
	MOVSS  X3, 12(R13)
	RET
