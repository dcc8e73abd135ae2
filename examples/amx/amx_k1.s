# Act Fig. 43: the compiled AMX code of oneDNN kernel K1 (examples/kernels/amx_k1.hlo), with the
# paper's addresses. Every tile is one contiguous 1 KiB block (stride 64): A row-major, B in the
# VNNI tiles of s8[32,64]{1,0:T(16,4)}, C in the 16x16 tiles of s32[32,32]{1,0:T(16,16)}.
.target amx
.input  arg0 u8[32,64] @0x0000
.input  arg1 s8[32,64]{1,0:T(16,4)} @0x0800
.output out0 s32[32,32]{1,0:T(16,16)} @0x1000
tilezero  t=0
tilezero  t=1
tilezero  t=2
tilezero  t=3
tileloadd rows=16 colsb=64 stride=64 addr=0x0000 t=4   # A rows 0..15
tileloadd rows=16 colsb=64 stride=64 addr=0x0400 t=5   # A rows 16..31
tileloadd rows=16 colsb=64 stride=64 addr=0x0800 t=6   # B columns 0..15
tileloadd rows=16 colsb=64 stride=64 addr=0x0c00 t=7   # B columns 16..31
tdpbusd   m=16 k=16 n=16 dst=0 src0=4 src1=6
tdpbusd   m=16 k=16 n=16 dst=1 src0=4 src1=7
tdpbusd   m=16 k=16 n=16 dst=2 src0=5 src1=6
tdpbusd   m=16 k=16 n=16 dst=3 src0=5 src1=7
tilestored rows=16 colsb=64 stride=64 t=0 addr=0x1000
tilestored rows=16 colsb=64 stride=64 t=1 addr=0x1400
tilestored rows=16 colsb=64 stride=64 t=2 addr=0x1800
tilestored rows=16 colsb=64 stride=64 t=3 addr=0x1c00
