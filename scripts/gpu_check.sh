#!/usr/bin/env bash
# The TRL engine on a GPU machine, one prepared script (not run on the CPU machine it was written on):
#   1. bf16, generation by the trained model (HF), 3 updates with a resume
#   2. bf16, generation by TRL's colocated vLLM (only if vllm is installed)
#   3. bf16, DeepSpeed ZeRO-2 on 1 GPU through accelerate launch (only if deepspeed is installed)
# each on MODEL (SmolLM2-135M-Instruct after `harnessrl models install smollm2-135m`, or any model folder),
# then a table of the checks and the peak GPU memory per process. Figures go into docs/scale.md.
#
#   scripts/gpu_check.sh MODEL_DIR [OUT_DIR]        (exit 0 only if every check that ran passed)
set -uo pipefail
MODEL=${1:?usage: scripts/gpu_check.sh MODEL_DIR [OUT_DIR]}
OUT=${2:-runs/gpu_check}
PY=${PYTHON:-python}
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || { echo "no GPU visible"; exit 2; }
"$PY" -c "import torch, trl, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'trl', trl.__version__, 'transformers', transformers.__version__)"

status=0
check() {  # check NAME [engine_check.py options...]
  local name=$1; shift
  echo "== $name"
  if "$PY" scripts/engine_check.py --model "$MODEL" --out "$OUT/$name" "$@" > "$OUT/$name.log" 2>&1; then
    tail -n 1 "$OUT/$name.log" > "$OUT/$name.json"
  else
    echo "   FAILED (see $OUT/$name.log)"; tail -n 20 "$OUT/$name.log"; status=1
  fi
}

check bf16-hf --set policy.dtype=bfloat16
if "$PY" -c "import vllm" 2>/dev/null; then
  check bf16-vllm-colocate --set policy.dtype=bfloat16 --set trl.use_vllm=true --set trl.vllm_mode=colocate \
    --set trl.vllm_gpu_memory_utilization=0.3
else
  echo "== bf16-vllm-colocate: skipped, vllm is not installed (pip install vllm)"
fi
if "$PY" -c "import deepspeed" 2>/dev/null; then
  cat > "$OUT/zero2.yaml" <<'YAML'
compute_environment: LOCAL_MACHINE
distributed_type: DEEPSPEED
deepspeed_config:
  zero_stage: 2
  offload_optimizer_device: none
  offload_param_device: none
  zero3_init_flag: false
mixed_precision: bf16
num_machines: 1
num_processes: 1
machine_rank: 0
use_cpu: false
YAML
  check bf16-zero2 --accelerate-config "$OUT/zero2.yaml" --set policy.dtype=bfloat16
else
  echo "== bf16-zero2: skipped, deepspeed is not installed (pip install deepspeed)"
fi

"$PY" - "$OUT" <<'PY'
import json, sys
from pathlib import Path
print(f"{'check':24} {'passed':7} {'episodes':8} {'peak GPU GiB per rank (updates 1-2 / update 3)':48} wall s")
for f in sorted(Path(sys.argv[1]).glob("*.json")):
    r = json.loads(f.read_text())
    s = r["summaries"]
    peak = " / ".join(",".join(str(x["peak_gpu_gib"]) for x in s[k]) for k in ("updates_1_2", "update_3_resumed"))
    wall = " / ".join(",".join(str(x["wall_s"]) for x in s[k]) for k in ("updates_1_2", "update_3_resumed"))
    print(f"{f.stem:24} {str(r['passed']):7} {r['episodes']:<8} {peak:48} {wall}")
PY
exit $status
