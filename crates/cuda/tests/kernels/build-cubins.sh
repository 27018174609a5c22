#!/usr/bin/env bash
# Rebuilds the committed test cubins from their PTX with ptxas (scripts/install-tools
# installs it; .tools/env exports TRIDENT_PTXAS). The GPU tests load these with
# Module::load_cubin on devices of the matching architecture; unit tests check that the
# image checks accept them.
set -euo pipefail
cd "$(dirname "$0")"
ptxas=${TRIDENT_PTXAS:-ptxas}
"$ptxas" --version | tail -n 1
"$ptxas" -arch=sm_90 -O3 vadd.ptx -o vadd.sm_90.cubin
