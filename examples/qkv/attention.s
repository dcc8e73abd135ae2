# softmax(Q . K^T) . V on the QKV accelerator: Act Fig. 10(b), written by hand.
.target qkv
.input  arg0 bf16[64,64] @0          # Q
.input  arg1 bf16[64,64] @8192       # K
.input  arg2 bf16[64,64] @16384      # V
.output out0 bf16[64,64] @24576
load_rm  n=64 addr_in=0 addr_out=0          # Q  -> d1[0:64]
load_cm  n=64 addr_in=8192 addr_out=64      # K^T -> d1[64:128]
gemm     addr1=0 addr2=64 addr_out=0        # S = Q . K^T -> d2[0:64]
softmax  n=64 addr=0                        # P = softmax(S), in place
mov      n=64 addr_in=0 addr_out=0          # P -> d1[0:64]
load_rm  n=64 addr_in=16384 addr_out=64     # V -> d1[64:128]
gemm     addr1=0 addr2=64 addr_out=0        # O = P . V -> d2[0:64]
mov      n=64 addr_in=0 addr_out=0          # O -> d1[0:64]
store_rm n=64 addr_in=0 addr_out=24576      # O -> HBM
