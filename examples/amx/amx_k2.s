# Act Fig. 46: the compiled AMX code of oneDNN kernel K2 (examples/kernels/amx_k2.hlo), with the
# paper's addresses. Every tile is one contiguous 1 KiB block (stride 64): A row-major, B in the
# VNNI tiles of s8[32,64]{1,0:T(16,4)}, C in the 16x16 tiles of s32[16,32]{1,0:T(16,16)}.
.target amx
.input  arg0 u8[16,64] @0x0000
.input  arg1 s8[32,64]{1,0:T(16,4)} @0x0400
.output out0 s32[16,32]{1,0:T(16,16)} @0x0c00
tilezero  t=0
tilezero  t=1
tileloadd rows=16 colsb=64 stride=64 addr=0x0000 t=2   # A
tileloadd rows=16 colsb=64 stride=64 addr=0x0400 t=3   # B columns 0..15
tileloadd rows=16 colsb=64 stride=64 addr=0x0800 t=4   # B columns 16..31
tdpbusd   m=16 k=16 n=16 dst=0 src0=2 src1=3
tdpbusd   m=16 k=16 n=16 dst=1 src0=2 src1=4
tilestored rows=16 colsb=64 stride=64 t=0 addr=0x0c00
tilestored rows=16 colsb=64 stride=64 t=1 addr=0x1000
