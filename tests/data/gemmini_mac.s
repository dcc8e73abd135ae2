.target gemmini
.input  arg0 s8[16,16]{1,0} @0
.input  arg1 s8[16,16]{1,0} @256
.input  arg2 s32[16,16]{1,0} @512
.output out0 s32[16,16]{1,0} @1536
mvin rows=16 stride=16 dram=0 sp_addr=0
mvin rows=16 stride=16 dram=256 sp_addr=16
preload_ws k=16 b_addr=16
mvin_acc rows=16 stride=64 dram=512 acc_addr=0
compute_ws_acc rows=16 a_addr=0 c_addr=0
mvout_acc32 rows=16 stride=64 acc_addr=0 dram=1536
