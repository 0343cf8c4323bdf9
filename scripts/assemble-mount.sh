#!/usr/bin/env bash
# Assembles a real speech-asset mount (SPEC §4) from the public exports, on a machine that can
# download them, then verifies it with voiced's own check. voiced never downloads anything itself.
#
#   scripts/assemble-mount.sh DIR [VERSION]      e.g. scripts/assemble-mount.sh /srv/voice-models/2026-12 voice-models-2026-12
#
# Sources (pin the revisions you audited by setting the *_REV variables):
#   Whisper small, Optimum export     huggingface.co/onnx-community/whisper-small        (onnx/encoder_model.onnx, onnx/decoder_model_merged.onnx, tokenizer.json, config.json, generation_config.json)
#   Kokoro-82M v1.0 ONNX              huggingface.co/onnx-community/Kokoro-82M-v1.0-ONNX (onnx/model.onnx, voices/*.bin)
#   Kokoro config with the vocab      huggingface.co/hexgrad/Kokoro-82M                  (config.json)
#   misaki lexicons (optional)        github.com/hexgrad/misaki                          (misaki/data/us_gold.json, us_silver.json)
#   Silero VAD v5                     github.com/snakers4/silero-vad                     (src/silero_vad/data/silero_vad.onnx at v5.1.2)
# The fp32 files are used: float16 I/O is refused by voiced (docs: onnxruntime_go has no float16 type).
set -euo pipefail
dir=${1:?usage: scripts/assemble-mount.sh DIR [VERSION]}
version=${2:-voice-models-$(date -u +%Y-%m-%d)}
WHISPER_REV=${WHISPER_REV:-main}
KOKORO_REV=${KOKORO_REV:-main}
KOKORO_CONFIG_REV=${KOKORO_CONFIG_REV:-main}
MISAKI_REV=${MISAKI_REV:-main}
SILERO_REV=${SILERO_REV:-v5.1.2}
VOICES=${VOICES:-"af_heart am_adam bf_emma"}

hf=https://huggingface.co
gh=https://raw.githubusercontent.com
get() { # URL DEST
  mkdir -p "$(dirname "$2")"
  echo "fetch $1"
  curl -fL --retry 3 -o "$2.part" "$1" && mv "$2.part" "$2"
}

w=$dir/models/whisper-small
get "$hf/onnx-community/whisper-small/resolve/$WHISPER_REV/onnx/encoder_model.onnx" "$w/encoder_model.onnx"
get "$hf/onnx-community/whisper-small/resolve/$WHISPER_REV/onnx/decoder_model_merged.onnx" "$w/decoder_model_merged.onnx"
for f in tokenizer.json config.json generation_config.json; do
  get "$hf/onnx-community/whisper-small/resolve/$WHISPER_REV/$f" "$w/$f"
done

k=$dir/models/kokoro-82m
get "$hf/onnx-community/Kokoro-82M-v1.0-ONNX/resolve/$KOKORO_REV/onnx/model.onnx" "$k/model.onnx"
get "$hf/hexgrad/Kokoro-82M/resolve/$KOKORO_CONFIG_REV/config.json" "$k/config.json"
for v in $VOICES; do
  get "$hf/onnx-community/Kokoro-82M-v1.0-ONNX/resolve/$KOKORO_REV/voices/$v.bin" "$k/voices/$v.bin"
done
if [[ "${LEXICON:-1}" == 1 ]]; then
  for f in us_gold.json us_silver.json; do
    get "$gh/hexgrad/misaki/$MISAKI_REV/misaki/data/$f" "$k/lexicon/$f"
  done
fi

get "$gh/snakers4/silero-vad/$SILERO_REV/src/silero_vad/data/silero_vad.onnx" "$dir/models/silero-vad/silero_vad.onnx"

# The manifest: GNU sha256sum format, paths relative to the mount, exactly one version line.
( cd "$dir"
  { echo "# voiced speech assets"; echo "# version: $version"
    find models -type f | LC_ALL=C sort | xargs sha256sum; } > MODELS.sha256.part
  mv MODELS.sha256.part MODELS.sha256 )
echo "wrote $dir/MODELS.sha256 (version $version)"

bin=${VOICED_BIN:-$(dirname "$0")/../bin/voiced}
if [[ -x "$bin" ]]; then
  "$bin" assets verify "$dir"
else
  (cd "$dir" && sha256sum -c --quiet MODELS.sha256) && echo "verified with sha256sum (build bin/voiced for voiced's own check)"
fi
