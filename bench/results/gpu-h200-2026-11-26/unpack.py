"""Rebuild all-MiniLM-L6-v2's model.safetensors (float32) from the fp16 copy carried to the
device (the 64 MiB transfer limit); fp16 -> fp32 is exact for the rounded values."""
import lzma, sys
import safetensors.torch as st
import torch
sd = st.load(lzma.open(sys.argv[1]).read())
st.save_file({k: (v.float() if v.is_floating_point() else v) for k, v in sd.items()}, sys.argv[2],
             metadata={"format": "pt"})
