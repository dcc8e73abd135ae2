# K1 (Act Fig. 43): C[32,32] = A[32,64] . B[64,32], four 16x16 output tiles.
.target amx
.input  arg0 u8[32,64] @0                  # A, row-major: 64 bytes per row
.input  arg1 s8[64,32]{1,0:T(4,1)} @2048   # B in VNNI layout: 128 bytes per group of 4 rows
.output out0 s32[32,32] @4096              # C, row-major: 128 bytes per row
tilezero  t=0
tilezero  t=1
tilezero  t=2
tilezero  t=3
tileloadd rows=16 colsb=64 stride=64 addr=0 t=4       # A rows 0..15
tileloadd rows=16 colsb=64 stride=64 addr=1024 t=5    # A rows 16..31
tileloadd rows=16 colsb=64 stride=128 addr=2048 t=6   # B columns 0..15
tileloadd rows=16 colsb=64 stride=128 addr=2112 t=7   # B columns 16..31
tdpbusd   m=16 k=16 n=16 dst=0 src0=4 src1=6
tdpbusd   m=16 k=16 n=16 dst=1 src0=4 src1=7
tdpbusd   m=16 k=16 n=16 dst=2 src0=5 src1=6
tdpbusd   m=16 k=16 n=16 dst=3 src0=5 src1=7
tilestored rows=16 colsb=64 stride=128 t=0 addr=4096
tilestored rows=16 colsb=64 stride=128 t=1 addr=4160
tilestored rows=16 colsb=64 stride=128 t=2 addr=6144
tilestored rows=16 colsb=64 stride=128 t=3 addr=6208
