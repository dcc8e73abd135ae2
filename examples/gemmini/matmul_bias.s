# C = saturate_int8(A . B + D) on one 16x16 Gemmini tile, weight-stationary.
.target gemmini
.input  arg0 s8[16,16] @0            # A
.input  arg1 s8[16,16] @256          # B
.input  arg2 s32[16,16] @512         # D (bias)
.output out0 s8[16,16] @1536
mvin           rows=16 stride=16 dram=0 sp_addr=0       # A -> sp[0:16]
mvin           rows=16 stride=16 dram=256 sp_addr=16    # B -> sp[16:32]
mvin_acc       rows=16 stride=64 dram=512 acc_addr=0    # D -> acc[0:16]
preload_ws     k=16 b_addr=16                           # B -> array weights
compute_ws_acc rows=16 a_addr=0 c_addr=0                # acc += A . B
mvout          rows=16 stride=16 acc_addr=0 dram=1536   # saturate to int8 -> HBM
