export PYTHONUNBUFFERED=1
[ -f .dev2/m/model.safetensors ] || python3 .dev2/unpack.py .dev2/w16.xz .dev2/m/model.safetensors || exit 4
timeout 100 python3 .dev2/exp2.py 2>&1 2>&1 | grep -v Loading | tail -4
TOKENIZERS_PARALLELISM=true timeout 100 python3 .dev2/exp2.py 2>&1 2>&1 | grep -v Loading | tail -4
