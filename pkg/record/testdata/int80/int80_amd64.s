#include "textflag.h"

// func int80(nr, a1, a2, a3, a4, a5, a6 uintptr) uintptr
// A frame makes the assembler save and restore BP, the sixth argument.
TEXT ·int80(SB), NOSPLIT, $8-64
	MOVQ nr+0(FP), AX
	MOVQ a1+8(FP), BX
	MOVQ a2+16(FP), CX
	MOVQ a3+24(FP), DX
	MOVQ a4+32(FP), SI
	MOVQ a5+40(FP), DI
	MOVQ a6+48(FP), BP
	INT $0x80
	MOVQ AX, ret+56(FP)
	RET
