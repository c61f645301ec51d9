"""The shipped PP1 manifest against claim-breaking edits of the REAL vLLM 0.31.0 tree.

A cross-check of the seed audit found edits that make a claim false while every
check stayed green: in files the audit does not pin by digest (the runner, the
config, the older runner, DSpark's base class), and in the three pinned files on
any build other than the image (where only the rules, not the digest, judge).
Each edit below is made once in a private copy of the real tree; the checks whose
status changes must be exactly the ones listed, and every other check keeps the
status it has on the unmodified tree (``test_pp1_check.STATUSES``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from pp1audit.audit import audit
from pp1audit.manifest import Manifest, load_manifest
from pp1audit.sources import open_target

PP1 = REPO / "manifests" / "pp1.yaml"
GPU = "vllm/v1/worker/gpu/"
RUNNER = GPU + "model_runner.py"
LEGACY = "vllm/v1/worker/gpu_model_runner.py"
CONFIG = "vllm/config/speculative.py"
DFLASH = GPU + "spec_decode/dflash/speculator.py"
DSPARK = GPU + "spec_decode/dspark/speculator.py"
WATERMARKER = "        self.draft_watermarker: DraftWatermarker | None = None\n"
SPECULATOR_END = "            dcp_local_seq_lens=dcp_local_seq_lens,\n        )\n"
REJECTION = GPU + "spec_decode/rejection_sampler.py"
UTILS = GPU + "spec_decode/rejection_sampler_utils.py"
GUMBEL = GPU + "sample/gumbel.py"
DSPARK_DRAW = "        # sample_pos is the predicted token's position P. Sampling keys a draw\n"

MASK = """            self.structured_outputs_worker.apply_grammar_bitmask(
                logits,
                input_batch,
                grammar_output.structured_output_request_ids,
                grammar_output.grammar_bitmask,
            )
"""
MASKED = ("        if grammar_output is not None and logits.shape[0] > 0:\n"
          "            # Apply grammar bitmask to the logits in-place.\n"
          "            assert self.structured_outputs_worker is not None\n" + MASK)
CALL_END = "                self.speculator.draft_logits,\n            )\n"
SCATTER = """        if self._d2t_scatter_index is not None:
            assert self._draft_scatter_buf is not None
            buf = self._draft_scatter_buf[: logits.shape[0]]
            buf.index_copy_(1, self._d2t_scatter_index, logits.to(buf.dtype))
            logits = buf
"""
GREEDY_RETURN = "            return self.model.map_draft_to_target(draft_ids)\n"
EARLY_ARGMAX = ("        if step > 0:\n"
                "            return self.model.map_draft_to_target(logits.argmax(dim=-1))\n")
SCATTER_COMMENT = ("        # Probabilistic sampling and rejection operate in target-vocabulary\n"
                   "        # space. A reduced draft vocabulary is scattered into its target rows.\n")
MASK_TEST = "if grammar_output is not None and logits.shape[0] > 0:"
GUMBEL_LOAD = "    logits = logits.to(tl.float32)\n\n    value, idx = gumbel_block_argmax("
CONFIG_WRITES = {"config-module-sets-no-sample-method": "fail"}  # in a method or a function
LEGACY_SHIFTED = {"legacy-caches-draft-probs": "drift", "legacy-dense-rejection-sampler": "drift",
                  "legacy-missing-request-fallback": "drift"}
ARGMAX_RETURN = "            return logits.argmax(dim=-1)\n"
RELOAD = ("            ).to(tl.float32)\n            / temp\n        )\n"
          "        draft_lse = _compute_global_logsumexp(")
SALT = "_DRAFT_NOISE_SALT = tl.constexpr(1 << 30)"
VERIFIED = "        sampled, num_sampled = rejection_sample(\n"
PROCESSING_END = "            seq_lens_upper_bound_np,\n        )\n" + VERIFIED
DRAFT_LSE = """        draft_lse = _compute_global_logsumexp(
            draft_local_max_ptr,
            draft_local_max_stride,
            draft_local_sumexp_ptr,
            draft_local_sumexp_stride,
            logit_idx,
            vocab_num_blocks,
            PADDED_VOCAB_NUM_BLOCKS,
        )
"""
LSE_PARAMS = "    local_max_ptr,\n    local_max_stride,\n"
LSE_ONLY = {"verify-reloads-scaled-draft-logits": "fail"}
RELOADED = {"verify-reloads-scaled-draft-logits": "fail", "verify-draft-logprob-branches": "fail",
            "verify-reloads-draft-logits": "fail"}
DRAFT_CACHE = {"gumbel-caches-pre-temperature-logits": "fail", "gumbel-draft-cache": "fail"}
SAMPLER_CALLS = {"runner-sampler-gets-draft-logits": "fail", "runner-passes-draft-logits": "fail"}
NOT_DRAFTING = {"gumbel-separate-draft-noise": "fail"}
DRAFT_STATS = ("                ).to(tl.float32)\n                / temp\n            )\n"
               "            draft_max, draft_sumexp")
DRAFT_STATS_STORED = """            draft_max, draft_sumexp = _compute_max_and_sumexp(draft_logits)
            tl.store(
                draft_local_max_ptr + logit_idx * draft_local_max_stride + block_idx,
                draft_max,
            )
            tl.store(
                draft_local_sumexp_ptr
                + logit_idx * draft_local_sumexp_stride
                + block_idx,
                draft_sumexp,
            )
"""
MARKOV = "            logits_i = base_logits[:, i] + bias\n"
MARKOV_BIAS = "            bias = self.model.markov_bias(markov_embed)\n"
TOPK_CALL = "            logits_i = self.model.apply_markov_bias_gathered(\n"
GUMBEL_CALL = "        sampled = gumbel_sample(\n"
PROCESSING = "        processed_logits = self.sampler.apply_sampling_params(\n            logits,"
TOPK_BIAS = """            logits_i = self.model.apply_markov_bias_gathered(
                markov_embed,
                base_logits[:, i],
                base_values[:, i],
                draft_indices[:, i],
            )"""
GREEDY_ACCEPT = """                target_argmax = _compute_global_target_argmax(
                    target_local_max_ptr,
                    target_local_max_stride,
                    target_local_argmax_ptr,
                    target_local_argmax_stride,
                    logit_idx,
                    vocab_num_blocks,
                    PADDED_VOCAB_NUM_BLOCKS,
                )
                if SYNTHETIC_MODE:
                    rate = tl.load(synthetic_conditional_rates_ptr + i)
                    accepted = u < rate
                else:
                    accepted = target_argmax == draft_sampled
                accepted &= is_valid_draft
                verifying = accepted
                accepted_length += accepted
                tl.store(
                    sampled_ptr + req_idx * sampled_stride + i,
                    draft_sampled if accepted else target_argmax,
                )
"""
SPECULATOR = GPU + "spec_decode/speculator.py"
DRAWN_AT = ("            self.temperature,\n            self.seeds,\n"
            "            sample_pos - 1,\n")
FIELD = '    draft_sample_method: DraftSampleMethod = "greedy"\n'
HETEROGENEOUS = '        if self.use_heterogeneous_vocab and self.draft_sample_method != "greedy":\n'
CACHED_IDS = "                    self._draft_prob_req_ids = self.input_batch.req_ids.copy()\n"
CACHED = ("                draft_probs = self.drafter.take_last_draft_probs()\n"
          "                if draft_probs is not None:\n"
          "                    self._draft_probs = draft_probs\n")
ROW_MAP = ("        row_by_req_id = {\n            req_id: idx for idx, req_id in "
           "enumerate(self._draft_prob_req_ids)\n        }\n")
ROW_LOOKUP = "            row_idx = row_by_req_id.get(req_id)\n"
TAKEN = ("                draft_probs = self.drafter.take_last_draft_probs()\n"
         "                if draft_probs is not None:")
TAKEN_IN_TEST = ("                # (as many lines as before)\n"
                 "                if (draft_probs := self.drafter.take_last_draft_probs()) is not None:")
CACHE_ALLOC_END = "                device=device,\n            )\n\n        self.draft_watermarker"
CALL_PARAMS = ("        logits: torch.Tensor,\n        input_batch: InputBatch,\n"
               "        draft_logits: torch.Tensor | None = None,\n")
VERIFY_PARAMS = ("    def _verify(\n        self,\n        logits: torch.Tensor,\n"
                 "        draft_logits: torch.Tensor | None,\n        draft_sampled: torch.Tensor,\n")
SAMPLE_ARGS = """            processed_logits,
            draft_logits,
            draft_sampled,
            cu_num_logits,
            pos,
            idx_mapping,
            expanded_idx_mapping,
            expanded_local_pos,
            self.sampler.sampling_states.temperature.gpu,
            self.sampler.sampling_states.seeds.gpu,
            self.num_speculative_steps,
            self.synthetic_conditional_rates,
            use_fp64="""
SAMPLE_NAMES = (None, "draft_logits", "draft_sampled", "cu_num_logits", "pos", "idx_mapping",
                "expanded_idx_mapping", "expanded_local_pos", "temperature", "seed",
                "num_speculative_steps", "synthetic_conditional_rates")
CHUNK_ARGS = """                logits[lo:hi],
                draft_logits,
                draft_sampled[lo:hi],
                pos[lo:hi],
                chunk_cu_num_logits,
                input_batch.idx_mapping[start:end],
                input_batch.idx_mapping_np[start:end],
                input_batch.expanded_idx_mapping[lo:hi],
                input_batch.expanded_local_pos[lo:hi],
                input_batch.seq_lens_cpu_upper_bound.numpy()[start:end],
"""
CHUNK_NAMES = ("logits", "draft_logits", "draft_sampled", "pos", "cu_num_logits", "idx_mapping",
               "idx_mapping_np", "expanded_idx_mapping", "expanded_local_pos", "seq_lens_upper_bound_np")
STEP_DRAW = ("            draft_sampled_i = self._sample_logits(\n"
             "                logits_i, idx_map[:, i], sample_pos[:, i], i\n")
STEP_DRAW_BY_KEYWORD = STEP_DRAW.replace("idx_map[:, i], sample_pos[:, i], i",
                                         "step=i, sample_pos=sample_pos[:, i], idx_map=idx_map[:, i]")
MASK_ARGS = MASK.split("(\n", 1)[1].rsplit("            )\n", 1)[0]
MASK_NAMES = ("logits", "input_batch", "grammar_req_ids", "grammar_bitmask")
PROCESSING_ARGS = """            logits,
            expanded_idx_mapping,
            idx_mapping,
            idx_mapping_np,
            pos,
            draft_sampled,
            expanded_local_pos,
            seq_lens_upper_bound_np,
"""
PROCESSING_NAMES = ("logits", "expanded_idx_mapping", "idx_mapping", "idx_mapping_np", "pos", "input_ids",
                    "expanded_local_pos", "seq_lens_upper_bound_np")
CHUNKS_CALL_ARGS = """            logits,
            input_batch,
            draft_logits,
            draft_sampled,
            pos,
            chunk_logit_limit,
            max_num_logprobs,
"""
CHUNKS_CALL_NAMES = ("logits", "input_batch", "draft_logits", "draft_sampled", "pos",
                     "max_chunk_logits", "max_num_logprobs")


def reversed_lines(text: str) -> str:
    return "".join(reversed(text.splitlines(True)))


def keywords(lines: str, names: tuple[str | None, ...]) -> str:
    """The arguments (one a line) passed by keyword, each under its parameter's name (None:
    left positional); a line past ``names`` is kept as it is."""
    out = []
    for ln, name in zip(lines.splitlines(True), (*names, *[None] * len(lines)), strict=False):
        arg = ln.strip().rstrip(",")
        out.append(ln if name is None else ln.replace(arg, f"{name}={arg}", 1))
    return "".join(out)


LAUNCH_CACHE = """        logits_cache,
        logits_cache.stride(0) if logits_cache is not None else 0,
        logits_cache.stride(1) if logits_cache is not None else 0,
        logits_cache_col,
"""
LAUNCH_TAIL = """        logits,
        logits.stride(0),
        expanded_idx_mapping,
        seed,
        pos,
        temperature,
        vocab_size,
"""
LAUNCH_TAIL_NAMES = ("logits_ptr", "logits_stride", "expanded_idx_mapping_ptr", "seeds_ptr", "pos_ptr",
                     "temp_ptr", "vocab_size")
BLOCK_CACHE_PARAMS = ("    pos_ptr,\n    # [max_num_reqs, num_cols, vocab_size]\n    logits_cache_ptr,\n"
                      "    logits_cache_stride_0,\n    logits_cache_stride_1,\n    logits_cache_col_ptr,\n"
                      "    vocab_size,\n    IS_DRAFTING: tl.constexpr,\n")
BLOCK_CACHE_ARGS = ("        pos_ptr,\n        logits_cache_ptr,\n        logits_cache_stride_0,\n"
                    "        logits_cache_stride_1,\n        logits_cache_col_ptr,\n        vocab_size,\n"
                    "        IS_DRAFTING=IS_DRAFTING,\n")
KERNEL_FIRST = "def _gumbel_sample_kernel(\n    local_argmax_ptr,\n"
LAUNCH_FIRST = "    _gumbel_sample_kernel[(num_tokens, num_blocks)](\n        local_argmax,\n"
LAUNCH_TEMPERATURE = ("        temperature,\n        vocab_size,\n        BLOCK_SIZE=BLOCK_SIZE,\n"
                      "        IS_DRAFTING")
LSE_LOAD = """            draft_logits = (
                tl.load(
                    draft_logits_ptr
                    + req_state_idx * draft_logits_stride_0
                    + draft_step_idx * draft_logits_stride_1
                    + block_offsets,
                    mask=mask,
                    other=float("-inf"),
                ).to(tl.float32)
                / temp
            )
"""
LSE_SPLIT = """            draft_logits = tl.load(
                draft_logits_ptr
                + req_state_idx * draft_logits_stride_0
                + draft_step_idx * draft_logits_stride_1
                + block_offsets,
                mask=mask,
                other=float("-inf"),
            ).to(tl.float32)
            # The temperature, applied as a statement of its own.
            draft_logits = draft_logits / temp
            # (as many lines as before: no citation moves)
"""
LSE_ROW = """            draft_row = (draft_logits_ptr + req_state_idx * draft_logits_stride_0
                         + draft_step_idx * draft_logits_stride_1)
            draft_logits = (
                tl.load(
                    draft_row + block_offsets,
                    mask=mask,
                    other=float("-inf"),
                ).to(tl.float32)
                / temp
            )
            # (the row's address held in a local)
"""
LSE_TEMP = ("    temp = tl.load(temp_ptr + req_state_idx).to(tl.float32)\n\n"
            "    block_idx = tl.program_id(1)\n    block_offsets")
SYNTHETIC = """                if SYNTHETIC_MODE:
                    rate = tl.load(synthetic_conditional_rates_ptr + i)
                    accepted = u < rate
                else:
                    accepted = target_argmax == draft_sampled
"""
GREEDY_STORED = "                    draft_sampled if accepted else target_argmax,\n"
SAMPLE_POS = "    pos = pos.contiguous()\n    if logits_cache_col is not None:\n"
GREEDY_STORE = ("                tl.store(\n                    sampled_ptr + req_idx * sampled_stride + i,\n"
                "                    draft_sampled if accepted else target_argmax,\n                )\n"
                "            elif USE_BLOCK_VERIFICATION:\n")
ONE_HOT_END = "        ).to(tl.float32)\n\n    # Resample the rejected/bonus token.\n"
REJECTED_LOAD = """    rejected_draft_token = tl.load(
        draft_sampled_ptr + resample_token_idx + 1,
        mask=not is_bonus,
        other=0,
    )
"""
FLAG_LAUNCHES = ("BLOCK_SIZE=VOCAB_BLOCK_SIZE,\n        HAS_DRAFT_LOGITS=has_draft_logits,\n",
                 "            HAS_DRAFT_LOGITS=has_draft_logits,\n            num_warps=1",
                 "        HAS_DRAFT_LOGITS=has_draft_logits,\n        SYNTHETIC_MODE=",
                 "        HAS_DRAFT_LOGITS=has_draft_logits,\n        USE_FP64=use_fp64,\n")
FLAG_USES = (*FLAG_LAUNCHES, "    if has_draft_logits := ", "        if has_draft_logits:\n")
SCALED = """    if temp != 0.0 and APPLY_TEMPERATURE:
        # Match the behavior of _temperature_kernel: if that kernel uses
        # tl.div_rn, this must too.
        logits = logits / temp
"""
FALLBACK_END = ("                return None\n"
                "            draft_probs_rows.append(self._draft_probs[row_idx, :num_draft])\n")
DRAW_COMMENT = ("        # sample_pos is the predicted token's position P. Sampling keys a draw\n"
                "        # by the position before the sampled token, P-1.\n")
SCATTER_BROKEN = {"dspark-scatters-reduced-vocab": "fail", "dspark-sample-logits": "drift",
                  "dspark-markov-bias": "drift"}


def indent(text: str) -> str:
    return "".join("    " + ln if ln.strip() else ln for ln in text.splitlines(True))


# (file, old text, new text, {check id: status after the edit}).
MUTATIONS = [
    # 1. Files the audit does not pin by digest.
    pytest.param(RUNNER, "if grammar_output is not None and logits.shape[0] > 0:",
                 "if grammar_output is not None and input_batch.num_draft_tokens == 0:",
                 {"runner-grammar-before-sampler": "fail"}, id="g1-mask-skips-draft-path"),
    pytest.param(RUNNER, MASK, "            if input_batch.num_draft_tokens == 0:\n" + indent(MASK),
                 {"runner-grammar-before-sampler": "fail"}, id="g2-mask-under-inner-draft-test"),
    pytest.param(RUNNER, CALL_END, CALL_END + "            sampler_output = "
                 "self.rejection_sampler(logits, input_batch)\n",
                 {"runner-sampler-gets-draft-logits": "fail", "runner-passes-draft-logits": "fail",
                  "runner-every-sampler-call-gets-draft-logits": "fail"},
                 id="r3-second-call-without-draft-logits"),
    pytest.param(DFLASH, "        super().__init__(vllm_config, device)\n\n"
                 "        self.hidden_states = torch.zeros(",
                 "        super().__init__(vllm_config, device)\n        self.draft_logits = "
                 "torch.zeros(self.max_num_reqs, self.num_speculative_steps, self.vocab_size)\n\n"
                 "        self.hidden_states = torch.zeros(",
                 {"dflash-allocates-no-draft-logits": "fail"}, id="s1-dflash-allocates"),
    pytest.param(DSPARK, "        self.use_confidence_head: bool = False\n",
                 "        self.use_confidence_head: bool = False\n"
                 "        self.draft_logits = torch.zeros(1)\n",
                 {"dspark-allocates-no-draft-logits": "fail", "dspark-sample-logits": "drift",
                  "dspark-markov-bias": "drift"}, id="s2-dspark-allocates"),
    pytest.param(CONFIG, "    def __post_init__(self):\n",
                 '    def __post_init__(self):\n        if self.draft_sample_method == "greedy":\n'
                 '            self.draft_sample_method = "probabilistic"\n',
                 CONFIG_WRITES,
                 id="c1-post-init-overrides"),
    pytest.param(LEGACY, "from vllm.v1.sample.rejection_sampler import RejectionSampler\n",
                 "from vllm.v1.worker.gpu.spec_decode.rejection_sampler import RejectionSampler\n",
                 {"legacy-runner-uses-v1-rejection-sampler": "fail",
                  "legacy-runner-takes-no-module-rejection-sampler": "fail"}, id="l1-other-sampler"),
    pytest.param(LEGACY, "from vllm.v1.sample.sampler import Sampler\n",
                 "from vllm.v1.sample.sampler import Sampler\nfrom vllm.v1.worker.gpu.spec_decode."
                 "rejection_sampler import RejectionSampler\n",
                 {"legacy-runner-uses-v1-rejection-sampler": "fail", "legacy-caches-draft-probs": "drift",
                  "legacy-dense-rejection-sampler": "drift", "legacy-missing-request-fallback": "drift"},
                 id="l2-rebound-by-a-later-import"),
    # 2. The three pinned files, judged by the rules (any build but the image).
    pytest.param(DSPARK, "logits_i = base_logits[:, i] + bias", "logits_i = base_logits[:, i]",
                 {"dspark-markov-bias": "fail", "dspark-markov-bias-before-sampling": "fail",
                  "dspark-draws-each-step-in-its-place": "fail"},
                 id="d1-no-markov-bias"),
    pytest.param(DSPARK, "logits_i = base_logits[:, i] + bias\n",
                 "logits_i = base_logits[:, i] + bias\n            logits_i -= bias\n",
                 {"dspark-markov-bias-before-sampling": "fail"}, id="d1b-bias-taken-off-again"),
    pytest.param(DSPARK, SCATTER, "",
                 {"dspark-scatters-reduced-vocab": "fail", "dspark-sample-logits": "drift",
                  "dspark-markov-bias": "drift"}, id="d2-no-scatter"),
    pytest.param(DSPARK, GREEDY_RETURN, GREEDY_RETURN + EARLY_ARGMAX,
                 {"dspark-greedy-return-only-without-cache": "fail", "dspark-sample-logits": "drift",
                  "dspark-markov-bias": "drift"}, id="d3-another-early-return"),
    pytest.param(DSPARK, SCATTER_COMMENT, EARLY_ARGMAX, {"dspark-greedy-return-only-without-cache": "fail"},
                 id="d3b-another-early-return-same-lines"),
    pytest.param(DSPARK, "is_drafting=True,", "is_drafting=False,",
                 {"dspark-gumbel-draft-noise": "fail"}, id="d4-target-noise"),
    pytest.param(UTILS, "ratio = tl.exp(draft_log_probs - target_log_probs)",
                 "ratio = tl.exp(target_log_probs - draft_log_probs)",
                 {"resample-three-branches": "fail", "utils-resample": "fail",
                  "resample-residual-formula": "fail"},
                 id="u1-residual-ratio-inverted"),
    pytest.param(UTILS, "        draft_log_prob = 0.0\n", "        draft_log_prob = -1.0\n",
                 {"verify-reloads-draft-logits": "fail", "verify-draft-logprob-branches": "fail"},
                 id="u2-one-hot-logprob-not-zero"),
    # The citation verify-reloads-draft-logits claims the temperature division too: it is
    # anchored on the rule that checks both halves, so it fails with the division gone.
    pytest.param(UTILS, RELOAD, RELOAD.replace("/ temp", "/ 1.0"),
                 {"verify-reloads-scaled-draft-logits": "fail", "verify-draft-logprob-branches": "fail",
                  "verify-reloads-draft-logits": "fail"}, id="u3-no-temperature"),
    pytest.param(REJECTION, "        sampled, num_sampled = rejection_sample(\n",
                 "        processed_logits = logits\n        sampled, num_sampled = rejection_sample(\n",
                 {"verify-applies-sampling-params": "fail"}, id="v1-processed-logits-overwritten"),
    pytest.param(REJECTION, "        sampled, num_sampled = rejection_sample(\n",
                 "        processed_logits, _ = logits, None\n"
                 "        sampled, num_sampled = rejection_sample(\n",
                 {"verify-applies-sampling-params": "fail"}, id="v1b-overwritten-through-a-tuple"),
    pytest.param(UTILS, "accepted = target_argmax == draft_sampled",
                 "accepted = draft_sampled >= 0",
                 {"verify-greedy-compares-target-argmax": "fail"}, id="greedy-without-argmax"),
    pytest.param(UTILS, "            elif USE_BLOCK_VERIFICATION:\n", "            elif False:\n",
                 {"block-verification-prefix-joint-ratio": "fail"}, id="no-block-verification"),
    pytest.param(UTILS, "            target_log_probs += log_p_tau\n", "",
                 {"block-verification-scaled-residual": "fail"}, id="block-residual-unscaled"),
    # 3. The routine the seed names for the cache and the noise (vllm/.../sample/gumbel.py).
    pytest.param(GUMBEL, "    if logits_cache_ptr is not None:\n        # Store the logits",
                 "    logits = logits / temp\n    if logits_cache_ptr is not None:\n"
                 "        # Store the logits",
                 {"gumbel-caches-pre-temperature-logits": "fail", "gumbel-draft-cache": "fail",
                  "gumbel-block-draws-with-request-params": "fail"},
                 id="gumbel-caches-scaled-logits"),
    pytest.param(GUMBEL, "            pos = pos + _DRAFT_NOISE_SALT\n", "            pos = pos\n",
                 {"gumbel-separate-draft-noise": "fail"}, id="gumbel-shared-noise"),
    # 4. The second review (3a6ff92): each of these passed every rule.
    # The grammar mask under a test 0.31.0 does not make (an allow-list, not draft words).
    pytest.param(RUNNER, MASK_TEST, "if grammar_output is not None and self.num_speculative_steps == 0:",
                 {"runner-grammar-before-sampler": "fail"}, id="g3-mask-skips-speculative-steps"),
    pytest.param(RUNNER, MASK_TEST, "if grammar_output is not None and self.speculative_config is None:",
                 {"runner-grammar-before-sampler": "fail"}, id="g4-mask-skips-speculative-config"),
    pytest.param(RUNNER, MASK_TEST, "if input_batch.num_draft_tokens > 0:\n            pass\n"
                 "        elif grammar_output is not None:",
                 {"runner-grammar-before-sampler": "fail"}, id="g5-mask-in-an-elif-arm"),
    pytest.param(RUNNER, MASK_TEST, "if input_batch.num_draft_tokens > 0:\n            pass\n"
                 "        else:\n          if grammar_output is not None and logits.shape[0] > 0:",
                 {"runner-grammar-before-sampler": "fail"}, id="g6-mask-in-an-else-arm"),
    pytest.param(RUNNER, MASK, "            for _ in range(int(input_batch.num_draft_tokens == 0)):\n"
                 + indent(MASK), {"runner-grammar-before-sampler": "fail"}, id="g8-mask-in-a-loop"),
    pytest.param(RUNNER, MASK, "            while input_batch.num_draft_tokens == 0:\n" + indent(MASK)
                 + "                break\n", {"runner-grammar-before-sampler": "fail"},
                 id="g9-mask-in-a-while"),
    # Unpinned files: the kernel that feeds the cache, the salt, the config, DFlash, the legacy runner.
    pytest.param(GUMBEL, GUMBEL_LOAD, GUMBEL_LOAD.replace(
        "    logits = logits.to(tl.float32)\n",
        "    logits = logits.to(tl.float32) / tl.load(temp_ptr + tl.load(expanded_idx_mapping_ptr"
        " + token_idx))\n"), {"gumbel-kernel-passes-loaded-logits": "fail"},
        id="gb1-kernel-caches-scaled-logits"),
    pytest.param(GUMBEL, "_DRAFT_NOISE_SALT = tl.constexpr(1 << 30)", "_DRAFT_NOISE_SALT = tl.constexpr(0)",
                 {"gumbel-draft-noise-salt": "fail"}, id="n2-salt-zero"),
    pytest.param(CONFIG, "    def __post_init__(self):\n",
                 "    def __post_init__(self):\n        cfg = self\n"
                 '        cfg.draft_sample_method = "probabilistic"\n',
                 CONFIG_WRITES, id="c6-post-init-through-an-alias"),
    pytest.param(CONFIG, "\n@config\nclass SpeculativeConfig:", "\ndef _pick_draft_sampling(cfg):\n"
                 '    cfg.draft_sample_method = "probabilistic"\n\n\n@config\nclass SpeculativeConfig:',
                 {"config-module-sets-no-sample-method": "fail", "config-default-greedy": "drift"},
                 id="c5-module-helper-sets-it"),
    pytest.param(DFLASH, "        super().__init__(vllm_config, device)\n\n",
                 "        super().__init__(vllm_config, device)\n        me = self\n"
                 "        me.draft_logits = torch.zeros(1)\n\n",
                 {"dflash-allocates-no-draft-logits": "fail"}, id="s2b-dflash-allocates-through-an-alias"),
    pytest.param(LEGACY, "            self.rejection_sampler = RejectionSampler(",
                 "            from vllm.v1.worker.gpu.spec_decode import rejection_sampler as rs\n"
                 "            self.rejection_sampler = rs.RejectionSampler(",
                 {"legacy-runner-takes-no-module-rejection-sampler": "fail", **LEGACY_SHIFTED},
                 id="l3-other-sampler-through-a-module"),
    # Another early return before the sampling: in an elif, an else or a loop.
    pytest.param(DSPARK, SCATTER_COMMENT, "        elif step > 0:\n"
                 "            return self.model.map_draft_to_target(logits.argmax(dim=-1))\n",
                 {"dspark-greedy-return-only-without-cache": "fail"}, id="d5-early-return-in-an-elif"),
    pytest.param(DSPARK, SCATTER_COMMENT, "        elif step > 0:\n" + ARGMAX_RETURN,
                 {"dspark-sample-reaches-gumbel": "fail"}, id="d5c-unmapped-early-return-in-an-elif"),
    pytest.param(DSPARK, SCATTER_COMMENT,
                 "        if step == 0:\n            pass\n        else:\n" + ARGMAX_RETURN,
                 {"dspark-sample-reaches-gumbel": "fail", "dspark-sample-logits": "drift",
                  "dspark-markov-bias": "drift"}, id="d6-early-return-in-an-else"),
    pytest.param(DSPARK, SCATTER_COMMENT, "        for _ in range(step):\n" + ARGMAX_RETURN,
                 {"dspark-sample-reaches-gumbel": "fail"}, id="d7-early-return-in-a-loop"),
    pytest.param(UTILS, "        draft_log_prob = 0.0\n        draft_lse = 0.0\n",
                 "        draft_log_prob = 0.0\n        draft_log_prob -= 1.0\n",
                 {"verify-draft-logprob-branches": "fail", "verify-reloads-draft-logits": "fail"},
                 id="u2c-one-hot-logprob-changed-after"),
    pytest.param(REJECTION, "        sampled, num_sampled = rejection_sample(\n",
                 "        processed_logits = logits if self.sampler else "
                 "self.sampler.apply_sampling_params(logits)\n"
                 "        sampled, num_sampled = rejection_sample(\n",
                 {"verify-applies-sampling-params": "fail"}, id="v3-processed-logits-maybe-unprocessed"),
    # 5. The user test of the invariants (ut-inv, items 5-12): each rule left free the
    # very argument its claim rests on, or missed an overwrite / a second call.
    # The salt: `1 << 30 - 30` is 1 << 0.
    pytest.param(GUMBEL, SALT, "_DRAFT_NOISE_SALT = tl.constexpr(1 << 30 - 30)",
                 {"gumbel-draft-noise-salt": "fail"}, id="n3-salt-shift-by-a-difference"),
    pytest.param(GUMBEL, SALT, "_DRAFT_NOISE_SALT = tl.constexpr(1 << 30 % 30)",
                 {"gumbel-draft-noise-salt": "fail"}, id="n4-salt-shift-by-a-remainder"),
    # The drafting flag, on each of its three steps to the salting `if` (a constexpr:
    # False compiles the salting out), and the salting hidden in a function never called.
    pytest.param(GUMBEL, "        IS_DRAFTING=is_drafting,\n", "        IS_DRAFTING=False,\n",
                 NOT_DRAFTING, id="gd1-launch-not-drafting"),
    pytest.param(GUMBEL, "        vocab_size,\n        IS_DRAFTING=IS_DRAFTING,\n",
                 "        vocab_size,\n        IS_DRAFTING=False,\n", NOT_DRAFTING,
                 id="gd2-kernel-not-drafting"),
    pytest.param(GUMBEL, "        temp,\n        IS_DRAFTING=IS_DRAFTING,\n",
                 "        temp,\n        IS_DRAFTING=False,\n", NOT_DRAFTING,
                 id="gd3-block-not-drafting"),
    pytest.param(GUMBEL, "        if IS_DRAFTING:\n            pos = pos + _DRAFT_NOISE_SALT\n",
                 "        def _never_called():\n            if IS_DRAFTING:\n"
                 "                pos = pos + _DRAFT_NOISE_SALT\n",
                 {**NOT_DRAFTING, "gumbel-draft-cache": "drift"}, id="gd4-salting-in-a-nested-function"),
    pytest.param(GUMBEL, "        if IS_DRAFTING:\n            pos = pos + _DRAFT_NOISE_SALT\n",
                 "        class \u0100:\n            if IS_DRAFTING:\n"
                 "                pos = pos + _DRAFT_NOISE_SALT\n",
                 {**NOT_DRAFTING, "gumbel-draft-cache": "drift"},
                 id="gd4b-salting-in-a-nested-class-named-in-unicode"),
    pytest.param(GUMBEL, "    return sampled\n", "    return sampled\n\n\n@triton.jit\n"
                 "def gumbel_block_argmax(logits, block, mask, *args, **kwargs):\n"
                 "    return tl.max(logits, axis=0, return_indices=True)\n",
                 {**NOT_DRAFTING, **DRAFT_CACHE, "gumbel-draws-at-temperature": "fail",
                  "gumbel-kernel-call-wiring": "fail",
                  "gumbel-block-draws-with-request-params": "fail"},
                 id="gd5-block-defined-again-without-noise"),
    pytest.param(GUMBEL, "    # Enforce contiguity on non-strided input tensors\n",
                 "    is_drafting = False\n", NOT_DRAFTING, id="gd6-flag-rebound"),
    # The cache store's mask: no lane is `block < 0`, and no request slot is `< -1`.
    pytest.param(GUMBEL, "            mask=mask & is_valid_req,", "            mask=mask & (block < 0),",
                 DRAFT_CACHE, id="gc1-cache-store-masks-every-lane"),
    pytest.param(GUMBEL, "    is_valid_req = req_state_idx >= 0\n", "    is_valid_req = req_state_idx < -1\n",
                 DRAFT_CACHE, id="gc2-no-request-is-valid"),
    # The grammar mask's other arguments (no request ids: no mask), its worker, and the
    # logits computed again after it.
    pytest.param(RUNNER, "                grammar_output.structured_output_request_ids,\n",
                 "                [],\n", {"runner-grammar-before-sampler": "fail"},
                 id="g10-mask-without-request-ids"),
    pytest.param(RUNNER, "            self.structured_outputs_worker.apply_grammar_bitmask(\n",
                 "            self.other_worker.apply_grammar_bitmask(\n",
                 {"runner-grammar-before-sampler": "fail", "runner-grammar-mask": "fail"},
                 id="g11-mask-by-another-object"),
    pytest.param(RUNNER, "        sampler_output: SamplerOutput | None\n",
                 "        logits = self.model.compute_logits(sample_hidden_states)\n"
                 "        sampler_output: SamplerOutput | None\n",
                 {"runner-grammar-before-sampler": "fail"}, id="g12-logits-computed-again-after-mask"),
    # A second sampler call without the draft logits, through an alias or `__call__`.
    pytest.param(RUNNER, CALL_END, CALL_END + "            rs = self.rejection_sampler\n"
                 "            sampler_output = rs(logits, input_batch)\n", SAMPLER_CALLS,
                 id="r4-second-call-through-an-alias"),
    pytest.param(RUNNER, CALL_END, CALL_END + "            sampler_output = "
                 "self.rejection_sampler.__call__(logits, input_batch)\n",
                 {**SAMPLER_CALLS, "runner-every-sampler-call-gets-draft-logits": "fail"},
                 id="r5-second-call-through-dunder-call"),
    # Verification: top-k/top-p skipped, no request processed, processed twice, written over.
    pytest.param(REJECTION, PROCESSING_END, PROCESSING_END.replace(
        "seq_lens_upper_bound_np,\n", "seq_lens_upper_bound_np, skip_top_k_top_p=True,\n"),
        {"verify-applies-sampling-params": "fail"}, id="v5-top-k-top-p-skipped"),
    pytest.param(REJECTION, "            idx_mapping_np,\n            pos,\n",
                 "            idx_mapping_np[:0],\n            pos,\n",
                 {"verify-applies-sampling-params": "fail"}, id="v6-no-request-processed"),
    pytest.param(REJECTION, "        processed_logits = self.sampler.apply_sampling_params(\n",
                 "        idx_mapping_np = idx_mapping_np[:0]\n"
                 "        processed_logits = self.sampler.apply_sampling_params(\n",
                 {"verify-applies-sampling-params": "fail"}, id="v7-parameter-rebound-before"),
    pytest.param(REJECTION, VERIFIED, "        processed_logits = self.sampler.apply_sampling_params("
                 "processed_logits, expanded_idx_mapping, idx_mapping, idx_mapping_np, pos, "
                 "draft_sampled, expanded_local_pos, seq_lens_upper_bound_np)\n" + VERIFIED,
                 {"verify-applies-sampling-params": "fail"}, id="v8-processed-twice"),
    pytest.param(REJECTION, VERIFIED, "        processed_logits.copy_(logits)\n" + VERIFIED,
                 {"verify-applies-sampling-params": "fail"}, id="v9-overwritten-in-place"),
    pytest.param(REJECTION, VERIFIED, "        processed_logits[:] = logits\n" + VERIFIED,
                 {"verify-applies-sampling-params": "fail"}, id="v10-overwritten-by-item"),
    # The reloaded draft logit: scaled again, read at column 0, its log probability zeroed.
    pytest.param(UTILS, RELOAD, RELOAD.replace("/ temp", "/ temp * 2.0"), RELOADED,
                 id="u4-temperature-and-more"),
    pytest.param(UTILS, "                + token,\n", "                + 0,\n", RELOADED,
                 id="u5-cache-read-at-column-0"),
    pytest.param(UTILS, "        draft_log_prob = draft_logit - draft_lse\n",
                 "        draft_log_prob = draft_logit - draft_lse; "
                 "draft_log_prob = draft_log_prob * 0.0\n", RELOADED,
                 id="u6-cached-logprob-changed-after"),
    # What DSpark scatters into the target vocabulary: zeros, not the draft logits.
    pytest.param(DSPARK, "logits.to(buf.dtype))", "torch.zeros_like(logits, dtype=buf.dtype))",
                 {"dspark-scatters-reduced-vocab": "fail",
                  # a new call handed the logits (closed-world)
                  "dspark-draw-logits-handed-to-nothing-else": "fail"}, id="d8-scatters-zeros"),
    # 6. The review of 401f9ea: each of these passed every rule.
    # A local salt of 0 hides the module's in the function that salts.
    pytest.param(GUMBEL, "    # on H100/Ada/Blackwell", "    _DRAFT_NOISE_SALT = 0  # on H100/Ada/Blackwell",
                 NOT_DRAFTING, id="n7-local-salt-zero"),
    # A second store over the cache, after the one that caches the logits.
    pytest.param(GUMBEL, "            mask=mask & is_valid_req,\n        )",
                 "            mask=mask & is_valid_req,\n        )\n        tl.store(logits_cache_ptr"
                 " + req_state_idx * logits_cache_stride_0 + col * logits_cache_stride_1 + block,"
                 " logits * 0.0, mask=mask & is_valid_req)", DRAFT_CACHE, id="gc4-second-cache-store"),
    # The masked logits written over by item, or the request ids emptied before the mask.
    pytest.param(RUNNER, "        sampler_output: SamplerOutput | None\n",
                 "        sampler_output: SamplerOutput | None\n"
                 "        logits[:] = self.model.compute_logits(sample_hidden_states)\n",
                 {"runner-grammar-before-sampler": "fail"}, id="g15-logits-recomputed-in-place"),
    pytest.param(RUNNER, "            assert self.structured_outputs_worker is not None\n",
                 "            assert self.structured_outputs_worker is not None\n"
                 "            grammar_output.structured_output_request_ids.clear()\n",
                 {"runner-grammar-before-sampler": "fail"}, id="g16-request-ids-emptied"),
    pytest.param(RUNNER, "            assert self.structured_outputs_worker is not None\n",
                 "            assert self.structured_outputs_worker is not None\n"
                 "            del(grammar_output.structured_output_request_ids[:])\n",
                 {"runner-grammar-before-sampler": "fail"}, id="g17-request-ids-deleted-in-parens"),
    pytest.param(RUNNER, "            assert self.structured_outputs_worker is not None\n",
                 "            assert self.structured_outputs_worker is not None\n"
                 "            (grammar_output.structured_output_request_ids) = []\n",
                 {"runner-grammar-before-sampler": "fail"}, id="g18-request-ids-replaced-in-parens"),
    # DSpark's logits zeroed before the scatter, or after it.
    pytest.param(DSPARK, "            buf.index_copy_(", "            logits = torch.zeros_like(logits)\n"
                 "            buf.index_copy_(",
                 {**SCATTER_BROKEN, "dspark-draw-logits-handed-to-nothing-else": "fail"},
                 id="d10-zeroed-before-scatter"),
    pytest.param(DSPARK, "            logits = buf\n",
                 "            logits = buf\n            logits.zero_()\n", SCATTER_BROKEN,
                 id="d11-zeroed-after-scatter"),
    # The processed logits written over through an alias, or by the unbound method.
    pytest.param(REJECTION, VERIFIED, "        p = processed_logits\n        p.copy_(logits)\n" + VERIFIED,
                 {"verify-applies-sampling-params": "fail"}, id="v11-overwritten-through-an-alias"),
    pytest.param(REJECTION, VERIFIED, "        torch.Tensor.copy_(processed_logits, logits)\n" + VERIFIED,
                 {"verify-applies-sampling-params": "fail"}, id="v12-overwritten-by-the-unbound-method"),
    pytest.param(REJECTION, VERIFIED, "        p = processed_logits\n        p[:] = logits\n" + VERIFIED,
                 {"verify-applies-sampling-params": "fail"}, id="v13-overwritten-by-item-through-an-alias"),
    # 7. The fidelity review (s8): each passed every rule, most serious first.
    # A: verification falls back to point-mass q (no draft logits reach rejection_sample),
    # on each link of __call__ -> _verify_in_chunks -> _verify, or by rebinding them.
    pytest.param(REJECTION, "            processed_logits,\n            draft_logits,\n",
                 "            processed_logits,\n            None,\n", {"verify-passes-draft-logits": "fail"},
                 id="a-verify-drops-draft-logits"),
    pytest.param(REJECTION, "                logits[lo:hi],\n                draft_logits,\n",
                 "                logits[lo:hi],\n                None,\n",
                 {"verify-passes-draft-logits": "fail"},
                 id="a2-chunks-drop-draft-logits"),
    pytest.param(REJECTION, "            input_batch,\n            draft_logits,\n"
                 "            draft_sampled,\n",
                 "            input_batch,\n            None,\n            draft_sampled,\n",
                 {"verify-passes-draft-logits": "fail", "sampler-call-in-force": "fail"},
                 id="a3-call-drops-draft-logits"),
    pytest.param(REJECTION,
                 "        num_nans = get_num_nans(logits) if self.sampler.compute_nans else None\n",
                 "        num_nans = get_num_nans(logits) if self.sampler.compute_nans else None\n"
                 "        draft_logits = None\n", {"verify-passes-draft-logits": "fail"},
                 id="a4-draft-logits-rebound"),
    # X1 (second review): verification without the draft logits on one path only (each method
    # still has a call that passes them).
    pytest.param(REJECTION, VERIFIED, "        if not self.use_block_verification:\n"
                 "            sampled, num_sampled = rejection_sample(\n"
                 "                processed_logits, None, draft_sampled, cu_num_logits, pos,\n"
                 "                idx_mapping, expanded_idx_mapping, expanded_local_pos,\n"
                 "                self.sampler.sampling_states.temperature.gpu,\n"
                 "                self.sampler.sampling_states.seeds.gpu, self.num_speculative_steps,\n"
                 "                self.synthetic_conditional_rates)\n"
                 "            return processed_logits, sampled, num_sampled\n" + VERIFIED,
                 {"verify-passes-draft-logits": "fail"}, id="x1-one-path-drops-draft-logits"),
    # B: the verification kernel told there are no draft logits (or any kernel, or the flag rebound).
    pytest.param(UTILS, "        HAS_DRAFT_LOGITS=has_draft_logits,\n        SYNTHETIC_MODE=",
                 "        HAS_DRAFT_LOGITS=False,\n        SYNTHETIC_MODE=",
                 {"rejection-sample-uses-draft-logits": "fail"}, id="b-kernel-has-draft-logits-false"),
    pytest.param(UTILS, "        HAS_DRAFT_LOGITS=has_draft_logits,\n        USE_FP64=use_fp64,\n",
                 "        HAS_DRAFT_LOGITS=False,\n        USE_FP64=use_fp64,\n",
                 {"rejection-sample-uses-draft-logits": "fail"}, id="b2-resample-has-draft-logits-false"),
    pytest.param(UTILS, "    # Compute the per-vocab-block logits stats, such as target argmax\n",
                 "    has_draft_logits = False\n"
                 "    # Compute the per-vocab-block logits stats, such as target argmax\n",
                 {"rejection-sample-uses-draft-logits": "fail"}, id="b3-flag-rebound"),
    # P1: gumbel_sample never hands the draft cache to its kernel (or the kernel to the block).
    pytest.param(GUMBEL, "        logits_cache,\n        logits_cache.stride(0) if",
                 "        None,\n        logits_cache.stride(0) if",
                 {"gumbel-sample-passes-draft-cache": "fail"},
                 id="p1-cache-not-passed-to-kernel"),
    pytest.param(GUMBEL, "    num_tokens, vocab_size = logits.shape\n    if logits_cache",
                 "    num_tokens, vocab_size = logits.shape\n    logits_cache = None\n    if logits_cache",
                 {"gumbel-sample-passes-draft-cache": "fail"}, id="p1b-cache-rebound"),
    pytest.param(GUMBEL, "        pos_ptr,\n        logits_cache_ptr,\n        logits_cache_stride_0,\n"
                 "        logits_cache_stride_1,\n        logits_cache_col_ptr,\n        vocab_size,\n"
                 "        IS_DRAFTING=IS_DRAFTING,\n        APPLY_TEMPERATURE=APPLY_TEMPERATURE,\n"
                 "        USE_FP64=USE_FP64,\n        PER_TOKEN_COL=PER_TOKEN_COL,\n",
                 "        pos_ptr,\n        None,\n        logits_cache_stride_0,\n"
                 "        logits_cache_stride_1,\n        logits_cache_col_ptr,\n        vocab_size,\n"
                 "        IS_DRAFTING=IS_DRAFTING,\n        APPLY_TEMPERATURE=APPLY_TEMPERATURE,\n"
                 "        USE_FP64=USE_FP64,\n        PER_TOKEN_COL=PER_TOKEN_COL,\n",
                 {"gumbel-kernel-passes-loaded-logits": "fail",
                  "gumbel-kernel-call-wiring": "fail"},
                 id="p1c-kernel-drops-cache"),
    # C: the draft's logsumexp taken over untempered logits (local stats not divided, or
    # computed from other values than the scaled ones).
    pytest.param(UTILS, DRAFT_STATS, DRAFT_STATS.replace(
        "                / temp\n", "                # temperature: applied with the target's\n"),
        {"verify-draft-lse-of-scaled-logits": "fail"}, id="c-draft-local-stats-untempered"),
    pytest.param(UTILS, "_compute_max_and_sumexp(draft_logits)\n",
                 "_compute_max_and_sumexp(draft_logits * temp)\n",
                 {"verify-draft-lse-of-scaled-logits": "fail"}, id="c2-draft-stats-of-rescaled-logits"),
    # P2, P3: the draft drawn from untempered logits (q is then not the tempered softmax
    # verification scores): the launch's flag, the kernel's, or DSpark's own argument.
    pytest.param(GUMBEL, "        APPLY_TEMPERATURE=apply_temperature,\n",
                 "        APPLY_TEMPERATURE=False,\n",
                 {"gumbel-draws-at-temperature": "fail"}, id="p2-launch-ignores-apply-temperature"),
    # X2 (second review): the draw made at temperature 1 (or a constant), the cache and the
    # verification at the requests' temperatures.
    pytest.param(GUMBEL, LAUNCH_TEMPERATURE, LAUNCH_TEMPERATURE.replace(
        "temperature,", "torch.ones_like(temperature),", 1),
        {"gumbel-draws-at-temperature": "fail"}, id="x2-launch-at-temperature-one"),
    pytest.param(GUMBEL, LAUNCH_TEMPERATURE, LAUNCH_TEMPERATURE.replace("temperature,", "1.0,", 1),
                 {"gumbel-draws-at-temperature": "fail"}, id="x2b-launch-at-a-constant-temperature"),
    pytest.param(GUMBEL, "    # Enforce contiguity on non-strided input tensors\n",
                 "    temperature = torch.ones_like(temperature)\n",
                 {"gumbel-draws-at-temperature": "fail"}, id="x2c-temperature-rebound-to-ones"),
    # The cache found by name, not counted: swapped with its column at the launch, or held in
    # a local bound to None; swapped at the block's call only.
    pytest.param(GUMBEL, LAUNCH_CACHE, "        logits_cache_col,\n" + LAUNCH_CACHE.split("\n", 1)[1]
                 .replace("        logits_cache_col,\n", "        logits_cache,\n"),
                 {"gumbel-sample-passes-draft-cache": "fail",
                  "gumbel-sample-launch-wiring": "fail"},
                 id="p1d-cache-and-column-swapped-at-launch"),
    pytest.param(GUMBEL, (LAUNCH_CACHE, "    BLOCK_SIZE = 1024\n"),
                 (LAUNCH_CACHE.replace("        logits_cache,\n", "        cache,\n", 1),
                  "    BLOCK_SIZE = 1024\n    cache = None\n"),
                 {"gumbel-sample-passes-draft-cache": "fail"}, id="p1e-cache-local-bound-to-none"),
    pytest.param(GUMBEL, BLOCK_CACHE_ARGS, BLOCK_CACHE_ARGS.replace(
        "logits_cache_ptr,\n        logits_cache_stride_0,\n        logits_cache_stride_1,\n"
        "        logits_cache_col_ptr,", "logits_cache_col_ptr,\n        logits_cache_stride_0,\n"
        "        logits_cache_stride_1,\n        logits_cache_ptr,"),
        {"gumbel-kernel-passes-loaded-logits": "fail", "gumbel-kernel-call-wiring": "fail"},
        id="p1f-cache-and-column-swapped-at-block-call"),
    pytest.param(GUMBEL, "        vocab_size,\n        IS_DRAFTING=IS_DRAFTING,\n"
                 "        APPLY_TEMPERATURE=APPLY_TEMPERATURE,\n",
                 "        vocab_size,\n        IS_DRAFTING=IS_DRAFTING,\n        APPLY_TEMPERATURE=False,\n",
                 {"gumbel-draws-at-temperature": "fail"}, id="p2b-kernel-ignores-apply-temperature"),
    pytest.param(GUMBEL, "        logits = logits / temp\n\n", "        logits = logits\n\n",
                 {"gumbel-draws-at-temperature": "fail"}, id="p2c-noise-not-divided"),
    pytest.param(GUMBEL, "        logits = logits / temp\n\n",
                 "        def _scale():\n            logits = logits / temp\n",
                 {"gumbel-draws-at-temperature": "fail", **NOT_DRAFTING},
                 id="p2d-division-in-a-nested-function"),
    pytest.param(DSPARK, "            apply_temperature=True,\n", "            apply_temperature=False,\n",
                 {"dspark-draws-at-temperature": "fail"}, id="p3-dspark-draws-untempered"),
    pytest.param(DSPARK, (DRAW_COMMENT, "            self.temperature,\n            self.seeds,\n"),
                 ("        temperature = torch.ones_like(self.temperature)\n        # sample_pos is the "
                  "predicted token's position P; a draw is keyed by P-1.\n",
                  "            temperature,\n            self.seeds,\n"),
                 {"dspark-draws-at-temperature": "fail"}, id="p3b-dspark-temperature-local-of-ones"),
    pytest.param(DSPARK, "            self.temperature,\n            self.seeds,\n",
                 "            torch.ones_like(self.temperature),\n            self.seeds,\n",
                 {"dspark-draws-at-temperature": "fail"}, id="p3b-dspark-draws-at-temperature-one"),
    # I: DSpark's gumbel_sample a local wrapper that drops the cache and the draft noise.
    pytest.param(DSPARK, "from vllm.v1.worker.gpu.sample.gumbel import gumbel_sample\n",
                 "from vllm.v1.worker.gpu.sample.gumbel import gumbel_sample as _gumbel_sample\n",
                 {"dspark-gumbel-sample-is-gumbels": "fail"},
                 id="i-gumbel-sample-imported-under-another-name"),
    pytest.param(DSPARK, "        self._sample_sequential(num_reqs, head_hidden)\n",
                 "        self._sample_sequential(num_reqs, head_hidden)\n\n\n"
                 "def gumbel_sample(*args, is_drafting=False, logits_cache=None, **kwargs):\n"
                 "    return _gumbel_sample(*args, is_drafting=False, **kwargs)\n",
                 {"dspark-gumbel-sample-is-gumbels": "fail"}, id="i2-gumbel-sample-redefined"),
    # G2: the Markov bias taken off again (or in place, or the bias itself zeroed) before sampling.
    pytest.param(DSPARK, MARKOV, MARKOV + "            logits_i = logits_i - bias\n",
                 {"dspark-markov-bias-before-sampling": "fail"}, id="g2-markov-bias-undone"),
    pytest.param(DSPARK, MARKOV, MARKOV + "            logits_i.sub_(bias)\n",
                 {"dspark-markov-bias-before-sampling": "fail"}, id="g2b-markov-bias-undone-in-place"),
    pytest.param(DSPARK, "            bias = self.model.markov_bias(markov_embed)\n",
                 "            bias = self.model.markov_bias(markov_embed)\n"
                 "            bias = torch.zeros_like(bias)\n",
                 {"dspark-markov-bias-before-sampling": "fail", "dspark-markov-bias": "fail",
                  "dspark-draws-each-step-in-its-place": "fail"},
                 id="g2c-markov-bias-zeroed"),
    # H: the top-k path samples its candidates without the Markov head.
    pytest.param(DSPARK, TOPK_BIAS, "            logits_i = base_logits[:, i].scatter(\n                -1,\n"
                 "                draft_indices[:, i],\n                base_values[:, i],\n            )",
                 {"dspark-topk-markov-bias-before-sampling": "fail",
                  "dspark-topk-draws-each-step-in-its-place": "fail"}, id="h-topk-path-skips-markov-bias"),
    pytest.param(DSPARK, TOPK_BIAS, TOPK_BIAS + "\n            logits_i = base_logits[:, i]",
                 {"dspark-topk-markov-bias-before-sampling": "fail"}, id="h2-topk-bias-undone"),
    pytest.param(DSPARK, TOPK_BIAS, keywords(TOPK_BIAS, (None, "markov_embed", "logits", "values", "index"))
                 .replace("markov_embed=markov_embed", "markov_embed=torch.zeros_like(markov_embed)"),
                 {"dspark-topk-markov-bias-before-sampling": "fail",
                  "dspark-topk-draws-each-step-in-its-place": "fail"}, id="h3-topk-bias-by-keyword-of-zeros"),
    pytest.param(DSPARK, "            apply_temperature=True,\n",
                 "            apply_temperature=self.temperature is None,\n",
                 {"dspark-draws-at-temperature": "fail"}, id="p3c-dspark-draws-untempered-by-a-test"),
    # N: a greedy request accepting any valid draft; O: the point-mass residual masking nothing.
    pytest.param(UTILS, "                accepted &= is_valid_draft\n",
                 "                accepted |= is_valid_draft\n",
                 {"verify-greedy-compares-target-argmax": "fail"}, id="n-greedy-accepts-any-valid"),
    pytest.param(UTILS, "        # and does not need to be applied.\n        residual_logits = tl.where(",
                 "        # and does not need to be applied.\n        rejected_draft_token = -1\n"
                 "        residual_logits = tl.where(", {"resample-three-branches": "fail",
                 "utils-resample": "fail"},
                 id="o-one-hot-d-not-masked"),
    # X6: the one-hot residual replaced by the unmasked target after the mask; X9: the greedy
    # branch storing the draft token whether accepted or not (or by another test); U11b a
    # greedy acceptance decided again after the target comparison, outside synthetic mode.
    pytest.param(UTILS, ONE_HOT_END, ONE_HOT_END.replace(
        "\n\n", "\n        residual_logits = target_logits\n", 1),
        {"resample-three-branches": "fail", "utils-resample": "fail"}, id="x6-one-hot-mask-undone"),
    pytest.param(UTILS, GREEDY_STORED, "                    draft_sampled,\n",
                 {"verify-greedy-compares-target-argmax": "fail"}, id="x9-greedy-stores-the-draft-always"),
    pytest.param(UTILS, GREEDY_STORED, GREEDY_STORED.replace("if accepted", "if verifying"),
                 {"verify-greedy-compares-target-argmax": "fail"}, id="x9b-greedy-stores-by-another-test"),
    # XB1: the seeds and the temperatures swapped at the Gumbel launch.
    pytest.param(GUMBEL, "        seed,\n        pos,\n        temperature,\n",
                 "        temperature,\n        pos,\n        seed,\n",
                 {"gumbel-draws-at-temperature": "fail",
                  "gumbel-sample-launch-wiring": "fail"},
                 id="xb1-launch-seeds-and-temperatures-swapped"),
    # B9a a second store of the draft after the decided one; B9c the decided token stored on
    # one arm (synthetic mode), the draft on the other; X9c the store masked by the decision.
    pytest.param(UTILS, GREEDY_STORE, GREEDY_STORE.replace(
        "                )\n",
        "                ); tl.store(sampled_ptr + req_idx * sampled_stride + i, draft_sampled)\n"),
        {"verify-greedy-compares-target-argmax": "fail"}, id="b9a-greedy-draft-stored-again"),
    pytest.param(UTILS, GREEDY_STORE,
                 "                if SYNTHETIC_MODE:\n"
                 "                    tl.store(sampled_ptr + req_idx * sampled_stride + i,"
                 " draft_sampled if accepted else target_argmax)\n                else:\n"
                 "                    tl.store(sampled_ptr + req_idx * sampled_stride + i,"
                 " draft_sampled)\n            elif USE_BLOCK_VERIFICATION:\n",
                 {"verify-greedy-compares-target-argmax": "fail"},
                 id="b9c-greedy-decided-on-one-arm-only"),
    pytest.param(UTILS, GREEDY_STORED,
                 "                    draft_sampled if accepted else target_argmax, accepted,\n",
                 {"verify-greedy-compares-target-argmax": "fail"},
                 id="x9c-greedy-store-masked-by-the-decision"),
    # B6a: the one-hot mask computed into another name, the residual the unmasked target.
    pytest.param(UTILS, ("        residual_logits = tl.where(\n            block != rejected_draft_token,",
                         ONE_HOT_END),
                 ("        masked = tl.where(\n            block != rejected_draft_token,",
                  ONE_HOT_END.replace("\n\n", "\n        residual_logits = target_logits\n", 1)),
                 {"resample-three-branches": "fail", "utils-resample": "fail"},
                 id="b6a-one-hot-mask-into-another-name"),
    pytest.param(UTILS, SYNTHETIC, SYNTHETIC.replace(
        "                    rate = tl.load(synthetic_conditional_rates_ptr + i)\n", "").replace(
        "u < rate", "u < 0.5") + "                accepted = u < 0.5\n",
        {"verify-greedy-compares-target-argmax": "fail"}, id="u11b-greedy-accepts-at-random-after"),
    # U4-U6 kept: the draft's local stats of other values than the scaled cache.
    pytest.param(UTILS, LSE_LOAD, LSE_SPLIT.replace("draft_logits / temp", "draft_logits * temp"),
                 {"verify-draft-lse-of-scaled-logits": "fail"}, id="c3-split-stats-multiplied"),
    pytest.param(UTILS, LSE_LOAD, LSE_ROW.replace("+ draft_step_idx * draft_logits_stride_1)",
                                                  "+ 0 * draft_logits_stride_1)"),
                 {"verify-draft-lse-of-scaled-logits": "fail"}, id="c4-row-local-without-the-step"),
    # K1, K2b: the older runner drops what it cached; refuses before the missing-request path.
    pytest.param(LEGACY, CACHED_IDS, CACHED_IDS + "                    self._draft_probs = None\n",
                 {"legacy-runner-caches-draft-probs": "fail", "legacy-caches-draft-probs": "fail"},
                 id="k1-legacy-probs-dropped-after-caching"),
    pytest.param(LEGACY, CACHED_IDS, CACHED_IDS + "                    self._draft_prob_req_ids = None\n",
                 {"legacy-runner-caches-draft-probs": "fail", "legacy-caches-draft-probs": "fail"},
                 id="k1b-legacy-ids-dropped-after-caching"),
    pytest.param(LEGACY, ROW_MAP, "        row_by_req_id = {req_id: idx for idx, req_id in "
                 "enumerate(self._draft_prob_req_ids)}\n        if set(self.input_batch.req_ids) - "
                 "set(row_by_req_id): raise RuntimeError(\"missing q\")\n\n",
                 {"legacy-missing-request-warns-none": "fail"}, id="k2b-legacy-missing-request-raises-first"),
    # X5: an assert refuses a missing request before the fallback (before the loop, or in it).
    pytest.param(LEGACY, ROW_MAP, "        row_by_req_id = {req_id: idx for idx, req_id in "
                 "enumerate(self._draft_prob_req_ids)}\n"
                 "        assert set(self.input_batch.req_ids) <= set(row_by_req_id)\n\n",
                 {"legacy-missing-request-warns-none": "fail"},
                 id="x5-legacy-missing-request-asserted-first"),
    pytest.param(LEGACY, ROW_LOOKUP, "            assert req_id in row_by_req_id; " + ROW_LOOKUP.lstrip(),
                 {"legacy-missing-request-warns-none": "fail", "legacy-missing-request-fallback": "fail"},
                 id="x5b-legacy-missing-request-asserted-in-the-loop"),
    # The lookup given another default than None (a missing request then never reaches the
    # fallback); the cache kept only when there are none, or without a test, or no ids.
    pytest.param(LEGACY, ROW_LOOKUP, ROW_LOOKUP.replace("(req_id)", "(req_id, -1)"),
                 {"legacy-missing-request-warns-none": "fail", "legacy-missing-request-fallback": "fail"},
                 id="k2c-legacy-lookup-default-not-none"),
    pytest.param(LEGACY, CACHED, CACHED.replace(TAKEN, TAKEN_IN_TEST.replace("is not None", "is None")),
                 {"legacy-runner-caches-draft-probs": "fail", "legacy-caches-draft-probs": "fail"},
                 id="k1c-legacy-cached-only-when-none"),
    pytest.param(LEGACY, CACHED, CACHED.replace("if draft_probs is not None:", "if True:"),
                 {"legacy-runner-caches-draft-probs": "fail", "legacy-caches-draft-probs": "fail"},
                 id="k1d-legacy-cached-without-a-test"),
    pytest.param(LEGACY, CACHED_IDS, CACHED_IDS.replace("self.input_batch.req_ids.copy()", "[]"),
                 {"legacy-runner-caches-draft-probs": "fail", "legacy-caches-draft-probs": "fail"},
                 id="k1e-legacy-cached-without-ids"),
    # E: the cache converted after its allocation (no longer model head_dtype), in place of
    # the blank line after it (so no later line moves).
    pytest.param(SPECULATOR, CACHE_ALLOC_END, CACHE_ALLOC_END.replace(
        "\n\n", "\n            self.draft_logits = self.draft_logits.float()\n"),
        {"speculator-cache-dtype-from-spec": "fail"}, id="e-cache-upcast-not-head-dtype"),
    # I: values changed in place, no name bound (`in_place: true` rules): the masked logits
    # overwritten before the sampler (also through a view held in a local); the processed
    # logits written by `out=` or operator.setitem; a sampling argument or the draft
    # logits scaled in _verify; DSpark's scattered logits zeroed through torch.Tensor, its
    # bias zeroed before it is added, its biased logits written by `out=`; the older
    # runner's cached request ids emptied; rejection_sample's draft logits zeroed.
    pytest.param(RUNNER, MASK, MASK + "            logits.copy_(logits.new_zeros(logits.shape))\n",
                 {"runner-grammar-before-sampler": "fail"}, id="i1-masked-logits-copied-over"),
    pytest.param(RUNNER, MASK, MASK + "            rows = logits[:]; rows.zero_()\n",
                 {"runner-grammar-before-sampler": "fail"}, id="i2-masked-logits-zeroed-by-a-view"),
    pytest.param(REJECTION, VERIFIED, "        torch.neg(logits, out=processed_logits)\n" + VERIFIED,
                 {"verify-applies-sampling-params": "fail"}, id="i3-processed-logits-out"),
    pytest.param(REJECTION, VERIFIED,
                 "        operator.setitem(processed_logits, slice(None), logits)\n" + VERIFIED,
                 {"verify-applies-sampling-params": "fail"}, id="i4-processed-logits-setitem"),
    pytest.param(REJECTION, "        processed_logits = self.sampler.apply_sampling_params(\n",
                 "        torch.Tensor.div_(logits, 2.0)\n"
                 "        processed_logits = self.sampler.apply_sampling_params(\n",
                 {"verify-applies-sampling-params": "fail"}, id="i5-sampling-argument-scaled"),
    pytest.param(REJECTION, VERIFIED, "        draft_logits is None or torch.mul(draft_logits, 0.5, "
                 "out=draft_logits)\n" + VERIFIED,
                 {"verify-passes-draft-logits": "fail"}, id="i6-draft-logits-scaled-in-verify"),
    pytest.param(DSPARK, SCATTER, SCATTER.replace("            logits = buf\n",
                                                  "            logits = buf; torch.Tensor.zero_(logits)\n"),
                 {"dspark-scatters-reduced-vocab": "fail",
                  "dspark-draw-logits-handed-to-nothing-else": "fail"},
                 id="i7-dspark-scattered-logits-zeroed"),
    pytest.param(DSPARK, MARKOV, "            bias.zero_(); " + MARKOV.lstrip(),
                 {"dspark-markov-bias-before-sampling": "fail", "dspark-markov-bias": "fail",
                  "dspark-draws-each-step-in-its-place": "fail"},
                 id="i8-dspark-bias-zeroed-before-it-is-added"),
    pytest.param(DSPARK, MARKOV, MARKOV.rstrip("\n") + "; torch.sub(logits_i, bias, out=logits_i)\n",
                 {"dspark-markov-bias-before-sampling": "fail", "dspark-markov-bias": "fail"},
                 id="i9-dspark-biased-logits-unbiased-by-out"),
    pytest.param(DSPARK, TOPK_BIAS, TOPK_BIAS + "; logits_i[:] = base_logits[:, i]",
                 {"dspark-topk-markov-bias-before-sampling": "fail"},
                 id="i10-dspark-topk-biased-logits-written-over"),
    pytest.param(LEGACY, CACHED_IDS, CACHED_IDS.rstrip("\n") + "; self._draft_prob_req_ids.clear()\n",
                 {"legacy-runner-caches-draft-probs": "fail", "legacy-caches-draft-probs": "fail"},
                 id="i11-legacy-cached-ids-emptied"),
    pytest.param(UTILS, ") -> tuple[torch.Tensor, torch.Tensor]:\n    assert target_logits.ndim == 2",
                 ") -> tuple[torch.Tensor, torch.Tensor]:\n"
                 "    draft_logits is None or draft_logits.zero_(); assert target_logits.ndim == 2",
                 {"rejection-sample-uses-draft-logits": "fail"}, id="i12-rejection-draft-logits-zeroed"),
    # The older runner's cached ids deleted; the config given another value by a keyword
    # (replace(), a factory calling cls()), or normalised from another object's value.
    pytest.param(LEGACY, CACHED_IDS, CACHED_IDS.rstrip("\n") + "; del self._draft_prob_req_ids\n",
                 {"legacy-runner-caches-draft-probs": "fail", "legacy-caches-draft-probs": "fail"},
                 id="i13-legacy-cached-ids-deleted"),
    pytest.param(CONFIG, FIELD, FIELD + "\n    def sampled(self):\n"
                 "        return replace(self, draft_sample_method=\"probabilistic\")\n",
                 CONFIG_WRITES, id="c1-config-replaced-with-another-method"),
    pytest.param(CONFIG, FIELD, FIELD + "\n    @classmethod\n    def sampled(cls, **kw):\n"
                 "        return cls(draft_sample_method=\"probabilistic\", **kw)\n",
                 CONFIG_WRITES, id="c2-config-factory-with-another-method"),
    pytest.param(CONFIG, HETEROGENEOUS, "        self.draft_sample_method = "
                 "self.draft_model_config.hf_config.draft_sample_method.lower()\n" + HETEROGENEOUS,
                 CONFIG_WRITES, id="c3-config-normalised-from-another-object"),
    # I14/I15: the salt past the 32 position bits murmur3_hash32 mixes (`pos & 0xFFFFFFFF`:
    # added, then masked away, the draft noise is the target's), or the mask narrowed
    # below the salt.
    pytest.param(GUMBEL, SALT, "_DRAFT_NOISE_SALT = tl.constexpr(1 << 32)",
                 {"gumbel-draft-noise-salt": "fail"}, id="i14-salt-past-the-hashed-bits"),
    pytest.param(GUMBEL, SALT, "_DRAFT_NOISE_SALT = tl.constexpr(1 << 40)",
                 {"gumbel-draft-noise-salt": "fail"}, id="i14b-salt-far-past-the-hashed-bits"),
    pytest.param(GUMBEL, "    h = _murmur3_mix(h, (pos & 0xFFFFFFFF).to(tl.uint32))",
                 "    h = _murmur3_mix(h, (pos & 0x3FFFFFFF).to(tl.uint32))",
                 {"gumbel-draft-noise-salt": "fail"}, id="i15-hash-mask-below-the-salt"),
    # I16/I17 DSpark's third argument the temperatures only in its words: an arm never
    # taken, a power that makes them ones.
    pytest.param(DSPARK, DRAWN_AT, DRAWN_AT.replace(
        "self.temperature,", "self.temperature if False else torch.ones_like(self.temperature),"),
        {"dspark-draws-at-temperature": "fail"}, id="i16-dspark-temperature-in-an-arm-never-taken"),
    pytest.param(DSPARK, DRAWN_AT, DRAWN_AT.replace("self.temperature,", "self.temperature ** 0,"),
                 {"dspark-draws-at-temperature": "fail"}, id="i17-dspark-temperature-to-the-power-0"),
    # I18 the cache added to after the store (an atomic op is a write too); I19 a store
    # through another name of the cache's pointer.
    pytest.param(GUMBEL, "            mask=mask & is_valid_req,\n        )",
                 "            mask=mask & is_valid_req,\n        )\n        tl.atomic_add(logits_cache_ptr"
                 " + req_state_idx * logits_cache_stride_0 + col * logits_cache_stride_1 + block,"
                 " logits, mask=mask & is_valid_req)", DRAFT_CACHE, id="i18-cache-atomic-add"),
    pytest.param(GUMBEL, "            mask=mask & is_valid_req,\n        )",
                 "            mask=mask & is_valid_req,\n        )\n        base = logits_cache_ptr; "
                 "tl.store(base + req_state_idx * logits_cache_stride_0 + col * logits_cache_stride_1"
                 " + block, logits / 2.0, mask=mask & is_valid_req)", DRAFT_CACHE,
                 id="i19-cache-store-through-another-name"),
    # U1-U7 the code a claim says runs, made to run only sometimes (`unconditional`): the
    # draw in one arm of a conditional expression, after `and`, under a one-line `if`; the
    # sampling parameters applied, the Markov bias made or added, only on some passes.
    pytest.param(DSPARK, GUMBEL_CALL, "        sampled = logits.argmax(dim=-1) if step > 0 else "
                 "gumbel_sample(\n", {"dspark-sample-reaches-gumbel": "fail"},
                 id="u1-dspark-draw-in-an-arm"),
    pytest.param(DSPARK, GUMBEL_CALL, "        sampled = step == 0 and gumbel_sample(\n",
                 {"dspark-sample-reaches-gumbel": "fail"}, id="u2-dspark-draw-after-and"),
    pytest.param(DSPARK, GUMBEL_CALL, "        if step == 0: sampled = gumbel_sample(\n",
                 {"dspark-sample-reaches-gumbel": "fail"}, id="u3-dspark-draw-under-an-if"),
    pytest.param(REJECTION, PROCESSING, "        processed_logits = logits\n        if "
                 "self.num_speculative_steps > 1: " + PROCESSING.lstrip(),
                 {"verify-applies-sampling-params": "fail"}, id="u4-verify-processing-under-an-if"),
    pytest.param(DSPARK, MARKOV, "            logits_i = base_logits[:, i]\n            if i > 0: "
                 + MARKOV.lstrip(), {"dspark-markov-bias": "fail",
                                     "dspark-markov-bias-before-sampling": "fail",
                  "dspark-draws-each-step-in-its-place": "fail"},
                 id="u5-dspark-bias-added-on-some-passes"),
    pytest.param(DSPARK, MARKOV_BIAS, "            bias = torch.zeros_like(base_logits[:, i])\n"
                 "            if i > 0: " + MARKOV_BIAS.lstrip(),
                 {"dspark-markov-bias": "fail", "dspark-markov-bias-before-sampling": "fail",
                  "dspark-draws-each-step-in-its-place": "fail"},
                 id="u6-dspark-bias-made-on-some-passes"),
    pytest.param(DSPARK, TOPK_CALL, "            logits_i = base_logits[:, i]\n            if i > 0: "
                 + TOPK_CALL.lstrip(), {"dspark-topk-markov-bias-before-sampling": "fail",
                  "dspark-topk-draws-each-step-in-its-place": "fail"},
                 id="u7-dspark-topk-bias-on-some-passes"),
    # 10. Positional swaps (session 19): the draft logits still among the arguments, but
    # bound to another parameter (`has:` let each through); a parameter moved without
    # its argument.
    pytest.param(REJECTION, "            processed_logits,\n            draft_logits,\n"
                 "            draft_sampled,\n",
                 "            processed_logits,\n            draft_sampled,\n"
                 "            draft_logits,\n", {"verify-passes-draft-logits": "fail"},
                 id="s1-verify-swaps-draft-logits-with-the-sampled-ids"),
    pytest.param(REJECTION, "                logits[lo:hi],\n                draft_logits,\n"
                 "                draft_sampled[lo:hi],\n",
                 "                logits[lo:hi],\n                draft_sampled[lo:hi],\n"
                 "                draft_logits,\n", {"verify-passes-draft-logits": "fail",
                  "verify-in-chunks-passes-chunk-rows": "fail"},
                 id="s2-chunks-swap-draft-logits"),
    pytest.param(REJECTION, "            input_batch,\n            draft_logits,\n",
                 "            draft_logits,\n            input_batch,\n",
                 {"verify-passes-draft-logits": "fail", "sampler-call-in-force": "fail",
                  "sampler-call-passes-the-batch": "fail"},
                 id="s3-call-swaps-draft-logits"),
    pytest.param(RUNNER, "                input_batch,\n"
                 "                # Draft logits are needed for probabilistic rejection sampling.\n"
                 "                self.speculator.draft_logits,\n",
                 "                self.speculator.draft_logits,\n"
                 "                # Draft logits are needed for probabilistic rejection sampling.\n"
                 "                input_batch,\n",
                 {"runner-sampler-gets-draft-logits": "fail", "runner-passes-draft-logits": "fail",
                  "runner-every-sampler-call-gets-draft-logits": "fail"},
                 id="s4-runner-swaps-draft-logits-with-the-batch"),
    pytest.param(RUNNER, CALL_END, CALL_END + "            sampler_output = "
                 "self.rejection_sampler(logits, self.speculator.draft_logits, input_batch)\n",
                 {"runner-sampler-gets-draft-logits": "fail", "runner-passes-draft-logits": "fail",
                  "runner-every-sampler-call-gets-draft-logits": "fail"},
                 id="s5-second-call-with-draft-logits-in-the-batchs-place"),
    pytest.param(REJECTION, CALL_PARAMS,
                 "        logits: torch.Tensor,\n        draft_logits: torch.Tensor | None,\n"
                 "        input_batch: InputBatch = None,\n",
                 {"verify-passes-draft-logits": "fail"},
                 id="s6-call-takes-draft-logits-where-the-runner-passes-the-batch"),
    pytest.param(UTILS, "    # [max_num_reqs, num_speculative_steps, V]\n"
                 "    draft_logits: torch.Tensor | None,\n    # [num_logits]\n"
                 "    draft_sampled: torch.Tensor,\n",
                 "    # [max_num_reqs, num_speculative_steps, V]\n"
                 "    draft_sampled: torch.Tensor,\n    # [num_logits]\n"
                 "    draft_logits: torch.Tensor | None,\n",
                 {"rejection-sample-signature": "fail"},
                 id="s7-rejection-sample-takes-draft-logits-third"),
    pytest.param(REJECTION, VERIFY_PARAMS, VERIFY_PARAMS.replace(
                 "        draft_logits: torch.Tensor | None,\n        draft_sampled: torch.Tensor,\n",
                 "        draft_sampled: torch.Tensor,\n        draft_logits: torch.Tensor | None,\n"),
                 {"verify-passes-draft-logits": "fail",  # and the chunk's draft tokens now bind
                  "verify-in-chunks-passes-chunk-rows": "fail"},  # draft_logits
                 id="s8-verify-parameter-moved-without-its-argument"),
    pytest.param(UTILS, ("        target_logits,\n        target_logits.stride(0),\n"
                         "        target_local_argmax,\n",
                         "        draft_sampled,\n        draft_logits,\n        draft_logits_stride_0,\n"),
                 ("        draft_logits,\n        target_logits.stride(0),\n"
                  "        target_local_argmax,\n",
                  "        draft_sampled,\n        target_logits,\n        draft_logits_stride_0,\n"),
                 {"rejection-sample-uses-draft-logits": "fail"},
                 id="s9-kernel-launch-swaps-draft-and-target-logits"),
    pytest.param(UTILS, "        draft_sampled,\n        draft_logits,\n        draft_logits_stride_0,\n",
                 "        draft_logits,\n        draft_sampled,\n        draft_logits_stride_0,\n",
                 {"rejection-sample-uses-draft-logits": "fail"},
                 id="s10-kernel-launch-swaps-draft-logits-with-the-sampled-ids"),
    pytest.param(REJECTION, "            num_rejected=num_rejected,\n        )\n",
                 "            num_rejected=num_rejected,\n        )\n\n"
                 "    def __call__(self, logits, input_batch, draft_logits=None):\n"
                 "        return self._verify_in_chunks(logits, draft_logits, input_batch, None, None,"
                 " 0, 0)\n",
                 {"verify-passes-draft-logits": "fail", "sampler-call-in-force": "fail",
                  "sampler-call-passes-the-batch": "fail"},
                 id="s12-a-later-call-definition-swaps-them"),
    # The second review (session 19): the name in force, a call on one path only.
    pytest.param(REJECTION, "            num_rejected=num_rejected,\n        )\n",
                 "            num_rejected=num_rejected,\n        )\n    _with_draft_logits = __call__; _"
                 "_call__ = lambda self, logits, input_batch, draft_logits=None: self._with_draft_logits("
                 "logits, input_batch, None)\n",
                 {"sampler-call-in-force": "fail",
                  "sampler-call-passes-the-batch": "fail"}, id="s13-call-rebound-after-the-class-defines-it"),
    pytest.param(REJECTION, "    rejection_sample,\n)\n\n# Cap on",
                 "    rejection_sample,\n)\n_rs = rejection_sample; rejection_sample = lambda target_logi"
                 "ts, draft_logits, *a, **k: _rs(target_logits, None, *a, **k)  # noqa\n# Cap on",
                 {"rejection-sample-imported": "fail"}, id="s14-module-rebinds-rejection-sample"),
    pytest.param(REJECTION, "        sampled, num_sampled, logprobs_tensors = self._verify_in_chunks(\n",
                 "        if self.use_block_verification: _, sampled, num_sampled = self._verify(logits, "
                 "None, draft_sampled, pos, input_batch.cu_num_logits, input_batch.idx_mapping, input_bat"
                 "ch.idx_mapping_np, input_batch.expanded_idx_mapping, input_batch.expanded_local_pos, in"
                 "put_batch.seq_lens_cpu_upper_bound.numpy()); logprobs_tensors = None\n        else: sam"
                 "pled, num_sampled, logprobs_tensors = self._verify_in_chunks(\n",
                 {"verify-passes-draft-logits": "fail"}, id="s15-call-verifies-without-them-on-one-path"),
    pytest.param(REJECTION, "            processed_logits, sampled, num_sampled = self._verify(\n",
                 "            if self.synthetic_conditional_rates is not None: processed_logits = logits["
                 "lo:hi]; sampled, num_sampled = rejection_sample(processed_logits, None, draft_sampled[l"
                 "o:hi], chunk_cu_num_logits, pos[lo:hi], input_batch.idx_mapping[start:end], input_batch"
                 ".expanded_idx_mapping[lo:hi], input_batch.expanded_local_pos[lo:hi], self.sampler.sampl"
                 "ing_states.temperature.gpu, self.sampler.sampling_states.seeds.gpu, self.num_speculativ"
                 "e_steps, self.synthetic_conditional_rates)\n            else: processed_logits, sampled"
                 ", num_sampled = self._verify(\n",
                 {"verify-passes-draft-logits": "fail",
                  "verify-in-chunks-passes-chunk-rows": "fail"},
                 id="s16-chunks-sample-without-them-on-one-path"),
    pytest.param(UTILS, "        num_warps=1,\n    )\n\n    # Resample the rejected",
                 "        num_warps=1,\n    )\n"
                 "    if synthetic_conditional_rates is not None: _rejection_kernel[(num_reqs,)](sampled"
                 ", sampled.stride(0), num_sampled, target_rejected_logsumexp, draft_rejected_logsumexp,"
                 " target_logits, target_logits.stride(0), target_local_argmax, target_local_argmax.stri"
                 "de(0), target_local_max, target_local_max.stride(0), target_local_sumexp, target_local"
                 "_sumexp.stride(0), draft_sampled, target_logits, draft_logits_stride_0, draft_logits_s"
                 "tride_1, draft_local_max, draft_local_max.stride(0), draft_local_sumexp, draft_local_s"
                 "umexp.stride(0), cu_num_logits, idx_mapping, temperature, seed, pos, synthetic_conditi"
                 "onal_rates, cumulative_log_p, local_residual_mass, local_residual_mass.stride(0) if lo"
                 "cal_residual_mass is not None else 0, vocab_num_blocks, USE_BLOCK_VERIFICATION=use_blo"
                 "ck_verification, PADDED_VOCAB_NUM_BLOCKS=padded_vocab_num_blocks, HAS_DRAFT_LOGITS=has"
                 "_draft_logits, SYNTHETIC_MODE=synthetic_conditional_rates is not None, num_warps=1)\n"
                 "    # Resample the rejected",
                 {"rejection-sample-uses-draft-logits": "fail"},
                 id="s17-second-kernel-launch-with-the-target-in-their-place"),
    pytest.param(RUNNER, "            assert self.speculator is not None\n            sampler_output",
                 "            assert self.speculator is not None; self.speculator.draft_logits = None\n  "
                 "          sampler_output",
                 {"runner-sampler-gets-draft-logits": "fail", "runner-passes-draft-logits": "fail"},
                 id="s18-runner-clears-them-before-the-call"),
    pytest.param(RUNNER, "            assert self.speculator is not None\n            sampler_output",
                 "            assert self.speculator is not None; self.speculator.draft_logits.zero_()\n "
                 "           sampler_output",
                 {"runner-sampler-gets-draft-logits": "fail", "runner-passes-draft-logits": "fail"},
                 id="s19-runner-zeroes-them-before-the-call"),
    # The draft's logsumexp of the draft's own statistics, each for its parameter (T1-T5):
    # `has: draft_local_max_ptr` let every one of these through.
    pytest.param(UTILS, DRAFT_LSE, DRAFT_LSE.replace("draft_local_sumexp_ptr", "target_local_sumexp_ptr"),
                 LSE_ONLY, id="t1-draft-lse-of-the-target-sums"),
    pytest.param(UTILS, DRAFT_LSE, DRAFT_LSE.replace("draft_local_max_ptr,\n", "@,\n")
                 .replace("draft_local_sumexp_ptr", "draft_local_max_ptr")
                 .replace("@", "draft_local_sumexp_ptr"),
                 LSE_ONLY, id="t2-draft-lse-max-and-sums-swapped"),
    pytest.param(UTILS, DRAFT_LSE, DRAFT_LSE.replace("draft_local_max_stride", "target_local_max_stride"),
                 LSE_ONLY, id="t3-draft-lse-of-the-target-stride"),
    pytest.param(UTILS, DRAFT_LSE, DRAFT_LSE.replace("logit_idx,", "0,"),
                 LSE_ONLY, id="t4-draft-lse-of-another-row"),
    pytest.param(UTILS, "def _compute_global_logsumexp(\n" + LSE_PARAMS,
                 "def _compute_global_logsumexp(\n    local_max_stride,\n    local_max_ptr,\n",
                 LSE_ONLY, id="t5-logsumexp-parameters-swapped-alone"),
]


# Edits of the arguments and statements that carry the draft distribution from one kernel
# to the next (two reviews, W1-W25: a launch's or a helper call's arguments swapped, a
# stride, a row, a temperature read at the wrong index, the residual's formula). Their
# texts are too long for this file's lines: they and the statuses each must change are in
# tests/data/pp1_wiring_mutations.json.
def edits_from_data(name: str, *keys: str) -> list[Any]:
    """The edits of ``tests/data/<name>`` as parameters: path, old, new (a list is several
    edits of the file made together), then each of ``keys``."""
    data = json.loads((Path(__file__).parent / "data" / name).read_text(encoding="utf-8"))
    return [pytest.param(m["path"], *(tuple(m[k]) if isinstance(m[k], list) else m[k]
                                      for k in ("old", "new")), *(m[k] for k in keys), id=m["id"])
            for m in data]


MUTATIONS += edits_from_data("pp1_wiring_mutations.json", "expected")

# Edits that keep every claim (a stricter test, a normalisation, an upcast, another
# spelling of the same addition): no check may change status.
HARMLESS = [
    pytest.param(RUNNER, MASK_TEST, "if grammar_output is not None and (logits.shape[0] > 0 "
                 "or input_batch.num_draft_tokens > 0):", id="g7-mask-test-widened"),
    pytest.param(RUNNER, MASK_TEST, "if grammar_output is not None:", id="mask-test-as-in-0.30.0"),
    pytest.param(CONFIG, "    def __post_init__(self):\n", "    def __post_init__(self):\n"
                 "        self.draft_sample_method = self.draft_sample_method.lower()\n",
                 id="c8-sample-method-lower-cased"),
    pytest.param(REJECTION, "        sampled, num_sampled = rejection_sample(\n",
                 "        processed_logits = processed_logits.float()\n"
                 "        sampled, num_sampled = rejection_sample(\n", id="v4-processed-logits-upcast"),
    pytest.param(GUMBEL, "            pos = pos + _DRAFT_NOISE_SALT\n",
                 "            pos += _DRAFT_NOISE_SALT\n", id="n1-salt-added-in-place"),
    # The user test's harmless edits (ut-inv items 13, 14) and the new rules' allowances.
    pytest.param(GUMBEL, SALT, "_DRAFT_NOISE_SALT = tl.constexpr((1 << 30))",
                 id="n5-salt-argument-in-parentheses"),
    # (1 << 40 was listed here: the hash mixes `pos & 0xFFFFFFFF`, so it is no salt: I14)
    pytest.param(GUMBEL, SALT, "_DRAFT_NOISE_SALT = tl.constexpr(1 << 31)", id="n6-larger-salt"),
    pytest.param(RUNNER, MASK_TEST, "if logits.shape[0] > 0 and grammar_output is not None:",
                 id="g13-mask-test-operands-swapped"),
    pytest.param(RUNNER, MASK_TEST, "if grammar_output is not None and logits.shape[0] != 0:",
                 id="g14-mask-test-not-zero"),
    pytest.param(GUMBEL, "            mask=mask & is_valid_req,", "            mask=is_valid_req & mask,",
                 id="gc3-cache-mask-operands-swapped"),
    pytest.param(DSPARK, "logits.to(buf.dtype))", "logits)", id="d9-scatter-without-cast"),
    # The review of 401f9ea: arguments in redundant parentheses, a salt's shift in hex.
    pytest.param(REJECTION, "            pos,\n            draft_sampled,\n",
                 "            (pos),\n            draft_sampled,\n",
                 id="v14-sampling-argument-in-parentheses"),
    pytest.param(RUNNER, MASK, MASK.replace("input_batch,", "(input_batch),"),
                 id="g17-mask-argument-in-parentheses"),
    pytest.param(GUMBEL, SALT, "_DRAFT_NOISE_SALT = tl.constexpr(1 << 0x1E)", id="n8-salt-shift-in-hex"),
    # The fidelity review (s8): a plausible refactor next to each new rule.
    pytest.param(REJECTION, "            processed_logits,\n            draft_logits,\n",
                 "            processed_logits, draft_logits,\n", id="a-verify-arguments-rewrapped"),
    pytest.param(UTILS, "    if has_draft_logits := draft_logits is not None:\n",
                 "    has_draft_logits = draft_logits is not None\n    if has_draft_logits:\n",
                 id="b-flag-bound-before-its-test"),
    pytest.param(GUMBEL, "        logits_cache.stride(0) if logits_cache is not None else 0,\n",
                 "        0 if logits_cache is None else logits_cache.stride(0),\n",
                 id="p1-cache-stride-rewritten"),
    pytest.param(
        UTILS, DRAFT_STATS_STORED, DRAFT_STATS_STORED.replace("draft_max", "d_max").replace(
            "draft_sumexp,\n", "d_sumexp,\n").replace("draft_sumexp =", "d_sumexp ="),
        id="c-draft-stats-renamed"),
    pytest.param(GUMBEL, "    if temp != 0.0 and APPLY_TEMPERATURE:\n",
                 "    if APPLY_TEMPERATURE and temp != 0.0:\n",
                 id="p2-temperature-test-swapped"),
    pytest.param(DSPARK, "            apply_temperature=True,\n            is_drafting=True,\n",
                 "            is_drafting=True,\n            apply_temperature=True,\n",
                 id="p3-keywords-reordered"),
    pytest.param(DSPARK, "from vllm.v1.worker.gpu.sample.gumbel import gumbel_sample\n",
                 "from vllm.v1.worker.gpu.sample.gumbel import apply_temperature, gumbel_sample\n",
                 id="i-gumbel-import-of-two-names"),
    pytest.param(DSPARK, MARKOV + "            draft_sampled_i = self._sample_logits(\n"
                 "                logits_i, idx_map[:, i], sample_pos[:, i], i\n            )\n",
                 MARKOV + "            draft_sampled_i = self._sample_logits(logits_i, idx_map[:, i], "
                 "sample_pos[:, i], i)\n", id="g2-sampling-call-rewrapped"),
    pytest.param(DSPARK, TOPK_BIAS, TOPK_BIAS.replace("markov_embed,\n                base_logits[:, i],",
                                                      "markov_embed, base_logits[:, i],"),
                 id="h-topk-arguments-rewrapped"),
    pytest.param(UTILS, GREEDY_ACCEPT, GREEDY_ACCEPT.replace(" target_argmax", " argmax_token"),
                 id="n-target-argmax-renamed"),
    pytest.param(UTILS, "        mask=not is_bonus,\n        other=0,\n",
                 "        other=0,\n        mask=not is_bonus,\n",
                 id="o-rejected-token-load-keywords-swapped"),
    pytest.param(LEGACY, CACHED, "                last_probs = self.drafter.take_last_draft_probs()\n"
                 "                if last_probs is not None:\n"
                 "                    self._draft_probs = last_probs\n", id="k1-cached-probs-renamed"),
    pytest.param(LEGACY, "            self.input_batch.req_ids, spec_decode_metadata.num_draft_tokens\n"
                 "        ):\n",
                 "            self.input_batch.req_ids, spec_decode_metadata.num_draft_tokens, strict=False\n"
                 "        ):\n", id="k2-request-loop-zip-not-strict"),
    # The second review (claims2): claim-preserving edits that closed the gate. The draft
    # logits are found by name: another parameter after them (R1, R7), no default (R2),
    # passed by keyword (R3, R4b), a parameter and its argument moved together (R5), no
    # annotation (R8).
    pytest.param(REJECTION, CALL_PARAMS, CALL_PARAMS + "        grammar_output: Any = None,\n",
                 id="r1-call-parameter-after-draft-logits"),
    pytest.param(REJECTION, CALL_PARAMS, CALL_PARAMS + "        *,\n        num_nans_enabled: bool = True,\n",
                 id="r7-call-keyword-only-parameter-after-draft-logits"),
    pytest.param(REJECTION, CALL_PARAMS, CALL_PARAMS.replace(" = None,", ","),
                 id="r2-call-draft-logits-without-default"),
    pytest.param(REJECTION, SAMPLE_ARGS, keywords(SAMPLE_ARGS, SAMPLE_NAMES),
                 id="r3-verify-passes-by-keyword"),
    pytest.param(REJECTION, CHUNK_ARGS, keywords(CHUNK_ARGS, CHUNK_NAMES),
                 id="r4b-chunks-pass-all-by-keyword"),
    pytest.param(REJECTION, (VERIFY_PARAMS, CHUNK_ARGS),
                 (VERIFY_PARAMS.replace("        draft_logits: torch.Tensor | None,\n", "")
                  .replace("        draft_sampled: torch.Tensor,\n", "        draft_sampled: torch.Tensor,\n"
                           "        draft_logits: torch.Tensor | None,\n"),
                  CHUNK_ARGS.replace("                draft_logits,\n", "")
                  .replace("                draft_sampled[lo:hi],\n",
                           "                draft_sampled[lo:hi],\n                draft_logits,\n")),
                 id="r5-verify-parameter-and-argument-moved-together"),
    pytest.param(REJECTION, VERIFY_PARAMS, VERIFY_PARAMS.replace(
        "draft_logits: torch.Tensor | None,", "draft_logits,"), id="r8-verify-parameter-unannotated"),
    # The rejected draft token as loaded, however the load is spelled (U8, U9).
    pytest.param(UTILS, REJECTED_LOAD, REJECTED_LOAD.replace("    )\n", "    ).to(tl.int64)\n"),
                 id="u8-rejected-token-load-cast"),
    pytest.param(UTILS, REJECTED_LOAD, "    rejected_token_idx = resample_token_idx + 1\n"
                 + REJECTED_LOAD.replace("resample_token_idx + 1", "rejected_token_idx"),
                 id="u9-rejected-token-index-computed-first"),
    # The kernels' flag written inline at every launch (U1), its local renamed (U2), and
    # rejection_sample's draft_logits unannotated (U3).
    pytest.param(UTILS, FLAG_LAUNCHES,
                 tuple(t.replace("=has_draft_logits", "=draft_logits is not None") for t in FLAG_LAUNCHES),
                 id="u1-flag-inline-at-every-launch"),
    pytest.param(UTILS, FLAG_USES,
                 tuple(t.replace("has_draft_logits", "use_draft_logits") for t in FLAG_USES),
                 id="u2-flag-local-renamed"),
    pytest.param(UTILS, "    draft_logits: torch.Tensor | None,\n    # [num_logits]\n",
                 "    draft_logits,\n    # [num_logits]\n",
                 id="u3-rejection-sample-draft-logits-unannotated"),
    # The division at the temperature however spelled (G4 tl.div_rn, which the comment there
    # anticipates; G5 temp > 0.0; G6 two nested ifs, same lines), the flag as bool() (G12).
    pytest.param(GUMBEL, "        logits = logits / temp\n\n", "        logits = tl.div_rn(logits, temp)\n\n",
                 id="g4-temperature-division-div-rn"),
    pytest.param(GUMBEL, "    if temp != 0.0 and APPLY_TEMPERATURE:\n",
                 "    if APPLY_TEMPERATURE and temp > 0.0:\n", id="g5-temperature-test-positive"),
    pytest.param(GUMBEL, SCALED, "    if APPLY_TEMPERATURE:\n        if temp != 0.0:\n"
                 "            # As _temperature_kernel (tl.div_rn there, here too).\n"
                 "            logits = logits / temp\n", id="g6-temperature-tests-nested"),
    pytest.param(GUMBEL, "        APPLY_TEMPERATURE=apply_temperature,\n",
                 "        APPLY_TEMPERATURE=bool(apply_temperature),\n", id="g12-flag-launched-as-bool"),
    # The greedy acceptance's `&=` spelled out (U7); a check after the missing-request
    # fallback (L2; written on one line, and a later `if` too, so no line moves).
    pytest.param(UTILS, "                accepted &= is_valid_draft\n",
                 "                accepted = accepted & is_valid_draft\n",
                 id="u7-greedy-and-spelled-out"),
    # A kernel parameter added before the draft logits, with its argument (session 19: the
    # place is read from the kernel's definition, not pinned).
    pytest.param(UTILS, ("def _rejection_kernel(\n", "    _rejection_kernel[(num_reqs,)](\n"),
                 ("def _rejection_kernel(extra_ptr,\n", "    _rejection_kernel[(num_reqs,)](None,\n"),
                 id="s11-kernel-parameter-and-argument-added-before-draft-logits"),
    pytest.param(LEGACY, (FALLBACK_END, "        if not draft_probs_rows:\n            return None\n"),
                 (FALLBACK_END.replace("            draft_probs_rows", "            if row_idx >= "
                                       "self._draft_probs.shape[0]: raise IndexError(row_idx)\n"
                                       "            draft_probs_rows"),
                  "        if not draft_probs_rows: return None\n"),
                 id="l2-row-bounds-check-after-the-fallback"),
    pytest.param(LEGACY, FALLBACK_END, FALLBACK_END.replace(
        "            draft_probs_rows",
        "            assert row_idx < self._draft_probs.shape[0]; draft_probs_rows"),
        id="l2b-row-bounds-assert-after-the-fallback"),
    # DSpark's draw at the temperature by keyword (D1) or through a local (D6, in place of a
    # comment line); its biased logits made contiguous (D4) or upcast (D8) before sampling.
    pytest.param(DSPARK, "            self.temperature,\n            self.seeds,\n"
                 "            sample_pos - 1,\n",
                 "            temperature=self.temperature,\n            seed=self.seeds,\n"
                 "            pos=sample_pos - 1,\n", id="d1-dspark-temperature-by-keyword"),
    pytest.param(DSPARK, (DRAW_COMMENT, "            self.temperature,\n            self.seeds,\n"),
                 ("        temperature = self.temperature\n        # sample_pos is the predicted token's "
                  "position P; a draw is keyed by P-1.\n",
                  "            temperature,\n            self.seeds,\n"),
                 id="d6-dspark-temperature-in-a-local"),
    pytest.param(DSPARK, MARKOV, MARKOV + "            logits_i = logits_i.contiguous()\n",
                 id="d4-biased-logits-made-contiguous"),
    pytest.param(DSPARK, MARKOV, MARKOV + "            logits_i = logits_i.to(torch.float32)\n",
                 id="d8-biased-logits-upcast"),
    # The third review's list (s9): the cache followed by name, not by counting positions.
    # G1 made contiguous (the same tensor when it is), G2 a new first kernel parameter, G3
    # the block's parameters reordered with its call, G10 a keyword launch, G11 the cache
    # held in a local.
    pytest.param(GUMBEL, "        logits_cache_col = logits_cache_col.contiguous()\n",
                 "        logits_cache_col = logits_cache_col.contiguous()\n"
                 "    if logits_cache is not None:\n        logits_cache = logits_cache.contiguous()\n",
                 id="g1-cache-made-contiguous"),
    pytest.param(GUMBEL, (KERNEL_FIRST, LAUNCH_FIRST),
                 (KERNEL_FIRST.replace("(\n", "(\n    num_tokens,\n"),
                  LAUNCH_FIRST.replace("](\n", "](\n        num_tokens,\n")),
                 id="g2-kernel-new-first-parameter"),
    pytest.param(GUMBEL, (BLOCK_CACHE_PARAMS, BLOCK_CACHE_ARGS),
                 (BLOCK_CACHE_PARAMS.replace("    vocab_size,\n", "").replace(
                     "    pos_ptr,\n", "    pos_ptr,\n    vocab_size,\n"),
                  BLOCK_CACHE_ARGS.replace("        vocab_size,\n", "").replace(
                      "        pos_ptr,\n", "        pos_ptr,\n        vocab_size,\n")),
                 id="g3-block-parameters-reordered-with-its-call"),
    pytest.param(GUMBEL, LAUNCH_CACHE + LAUNCH_TAIL,
                 keywords(LAUNCH_CACHE + LAUNCH_TAIL, ("logits_cache_ptr", "logits_cache_stride_0",
                                                       "logits_cache_stride_1", "logits_cache_col_ptr",
                                                       *LAUNCH_TAIL_NAMES)),
                 id="g10-kernel-launched-by-keyword"),
    pytest.param(GUMBEL, (LAUNCH_CACHE, "    per_token_col = "),
                 (LAUNCH_CACHE.replace("        logits_cache,\n", "        cache,\n", 1),
                  "    cache = logits_cache\n    per_token_col = "), id="g11-cache-held-in-a-local"),
    pytest.param(GUMBEL, LAUNCH_TEMPERATURE, LAUNCH_TEMPERATURE.replace(
        "temperature,", "temperature.contiguous(),", 1), id="x2h-launch-temperature-contiguous"),
    # GJ the cache made contiguous at the launch, where it is one.
    pytest.param(GUMBEL, LAUNCH_CACHE, LAUNCH_CACHE.replace(
        "        logits_cache,\n",
        "        logits_cache.contiguous() if logits_cache is not None else None,\n", 1),
        id="gj-launch-cache-made-contiguous"),
    # GD/GD2 the temperatures upcast in gumbel_sample, GE at the launch; GC the parameter
    # renamed (and its argument); GF the kernel's temp_ptr renamed and passed by keyword.
    pytest.param(GUMBEL, SAMPLE_POS, SAMPLE_POS.replace(
                     "\n", "\n    temperature = temperature.float()\n", 1),
                 id="gd-sample-temperature-upcast"),
    pytest.param(GUMBEL, SAMPLE_POS, SAMPLE_POS.replace(
                     "\n", "\n    temperature = temperature.to(torch.float32)\n", 1),
                 id="gd2-sample-temperature-to-fp32"),
    pytest.param(GUMBEL, LAUNCH_TEMPERATURE, LAUNCH_TEMPERATURE.replace(
        "temperature,", "temperature.float(),", 1), id="ge-launch-temperature-upcast"),
    pytest.param(GUMBEL, ("    temperature: torch.Tensor,  # [max_num_reqs]\n", LAUNCH_TEMPERATURE),
                 ("    temperatures: torch.Tensor,  # [max_num_reqs]\n",
                  LAUNCH_TEMPERATURE.replace("temperature,", "temperatures,", 1)),
                 id="gc-sample-temperature-parameter-renamed"),
    pytest.param(GUMBEL, ("    pos_ptr,\n    temp_ptr,\n    vocab_size,\n",
                          "        temp_ptr,\n        seeds_ptr,\n", LAUNCH_TEMPERATURE),
                 ("    pos_ptr,\n    temperature_ptr,\n    vocab_size,\n",
                  "        temperature_ptr,\n        seeds_ptr,\n",
                  LAUNCH_TEMPERATURE.replace(
                      "        temperature,\n        vocab_size,\n",
                      "        temperature_ptr=temperature,\n        vocab_size=vocab_size,\n", 1)),
                 id="gf-kernel-temperature-renamed-passed-by-keyword"),
    # D5b the top-k bias called with keywords only; D10 the division asked for by a test that
    # always holds (self.temperature is a tensor). R6 (_verify without its return annotation)
    # fails verify-method again: its regex form, which allowed it, made every failure of the
    # rule list the class's 1,018 nodes instead of its reason (README: a possible false alarm).
    pytest.param(DSPARK, TOPK_BIAS, keywords(TOPK_BIAS, (None, "markov_embed", "logits", "values", "index")),
                 id="d5b-topk-bias-by-keyword"),
    pytest.param(DSPARK, "            apply_temperature=True,\n",
                 "            apply_temperature=self.temperature is not None,\n",
                 id="d10-dspark-temperature-asked-by-a-test"),
    # U4 the draft's local stats divided in a statement of their own, U5 the row's address
    # in a local, U6 the temperature not upcast (FP32 already); U10 the rejected token kept
    # only where valid (the masking arms run only then); U11 the greedy comparison made
    # first and synthetic mode's rate over it; X6/X9's harmless spellings.
    pytest.param(UTILS, LSE_LOAD, LSE_SPLIT, id="u4-lse-division-a-statement"),
    pytest.param(UTILS, LSE_LOAD, LSE_ROW, id="u5-lse-row-address-in-a-local"),
    pytest.param(UTILS, LSE_TEMP, LSE_TEMP.replace(".to(tl.float32)", ""),
                 id="u6-lse-temperature-not-upcast"),
    pytest.param(UTILS, "    is_valid_rejected_draft = rejected_draft_token >= 0\n\n",
                 "    is_valid_rejected_draft = rejected_draft_token >= 0\n"
                 "    rejected_draft_token = tl.where(is_valid_rejected_draft, rejected_draft_token, 0)\n",
                 id="u10-rejected-token-kept-where-valid"),
    pytest.param(UTILS, SYNTHETIC, "                accepted = target_argmax == draft_sampled\n"
                 "                if SYNTHETIC_MODE:\n"
                 "                    rate = tl.load(synthetic_conditional_rates_ptr + i)\n"
                 "                    accepted = u < rate\n                # (as many lines as before)\n",
                 id="u11-greedy-comparison-first-synthetic-over-it"),
    pytest.param(UTILS, ONE_HOT_END, ONE_HOT_END.replace(
        "\n\n", "\n        residual_logits = residual_logits.to(tl.float32)\n", 1),
        id="x6h-one-hot-residual-cast-again"),
    pytest.param(UTILS, GREEDY_STORED,
                 "                    tl.where(accepted, draft_sampled, target_argmax),\n",
                 id="x9h-greedy-store-by-tl-where"),
    # H9a the store masked by what always holds; H9c the token cast; H9d/H9e tl.where on the
    # rejection, the target first.
    pytest.param(UTILS, GREEDY_STORED, "                    draft_sampled if accepted else target_argmax, "
                 "mask=is_valid_draft | True,\n", id="h9a-greedy-store-mask-always-true"),
    pytest.param(UTILS, GREEDY_STORED,
                 "                    (draft_sampled if accepted else target_argmax).to(tl.int32),\n",
                 id="h9c-greedy-store-cast"),
    pytest.param(UTILS, GREEDY_STORED,
                 "                    tl.where(not accepted, target_argmax, draft_sampled),\n",
                 id="h9d-greedy-store-tl-where-not-accepted"),
    pytest.param(UTILS, GREEDY_STORED,
                 "                    tl.where(accepted == 0, target_argmax, draft_sampled),\n",
                 id="h9e-greedy-store-tl-where-rejected-first"),
    # H6a: every arm's residual masked again to the vocabulary after the branches (-inf
    # where the mask is off: no token gains probability).
    pytest.param(UTILS, ONE_HOT_END, ONE_HOT_END.replace(
        "\n\n", "\n    residual_logits = tl.where(mask, residual_logits, float(\"-inf\"))\n", 1),
        id="h6a-residual-masked-again-after-the-arms"),
    # G7 gumbel_sample without its return annotation; G9 a comment in it naming a def.
    pytest.param(GUMBEL, "    use_fp64: bool = False,\n) -> torch.Tensor:\n    # Enforce contiguity",
                 "    use_fp64: bool = False,\n):\n    # Enforce contiguity",
                 id="g7-sample-without-return-annotation"),
    pytest.param(GUMBEL, "    # NOTE(woosuk): Use int64 for later indexing.\n",
                 "    # NOTE(woosuk): Use int64 for later indexing (see def _gather(x): in utils).\n",
                 id="g9-comment-naming-a-def-in-sample"),
    # L4 the request ids copied by list(); L5 the probabilities bound in the test (`:=`).
    pytest.param(LEGACY, CACHED_IDS, CACHED_IDS.replace("self.input_batch.req_ids.copy()",
                                                        "list(self.input_batch.req_ids)"),
                 id="l4-legacy-request-ids-copied-by-list"),
    pytest.param(LEGACY, CACHED, CACHED.replace(TAKEN, TAKEN_IN_TEST),
                 id="l5-legacy-probabilities-bound-in-the-test"),
    # H5a/H5b asserts of the cache's shape and of a request's draft count (before the
    # fallback, or in the loop): no refusal of a missing request.
    pytest.param(LEGACY, ROW_MAP, ROW_MAP.replace(
        "        }\n", "        }; assert len(self._draft_prob_req_ids) == self._draft_probs.shape[0]\n", 1),
        id="h5a-legacy-cache-shape-asserted"),
    pytest.param(LEGACY, "            if num_draft == 0:\n                continue\n",
                 "            if num_draft == 0: continue\n"
                 "            assert num_draft <= self._draft_probs.shape[1]\n",
                 id="h5b-legacy-draft-count-asserted-in-the-loop"),
    # I1h/I2h a copy of the masked (biased) logits changed in place: not the logits sampled.
    pytest.param(RUNNER, MASK, MASK + "            scratch = logits.clone(); scratch.zero_()\n",
                 id="i1h-a-copy-of-the-masked-logits-zeroed"),
    pytest.param(DSPARK, MARKOV + "            draft_sampled_i = self._sample_logits(\n",
                 MARKOV + "            shown = logits_i.float(); shown.div_(2); "
                 "draft_sampled_i = self._sample_logits(\n",
                 id="i2h-a-copy-of-the-biased-logits-scaled"),
    # C1h/C2h the config given "greedy" by keyword, its own value normalised.
    pytest.param(CONFIG, FIELD, FIELD + "\n    def greedy(self):\n"
                 "        return replace(self, draft_sample_method=\"greedy\")\n",
                 id="c1h-config-replaced-with-greedy"),
    pytest.param(CONFIG, HETEROGENEOUS, "        self.draft_sample_method = "
                 "self.draft_sample_method.lower()\n" + HETEROGENEOUS,
                 id="c2h-config-own-value-normalised"),
    # T1h DSpark's draw given its temperatures, seeds and positions by keyword.
    pytest.param(DSPARK, DRAWN_AT, "            temperature=self.temperature,\n"
                 "            seed=self.seeds,\n            pos=sample_pos - 1,\n",
                 id="t1h-dspark-draw-arguments-by-keyword"),
    # The draft's logsumexp called by keyword, in another order: each statistic still
    # reaches its parameter.
    pytest.param(UTILS, DRAFT_LSE, "        draft_lse = _compute_global_logsumexp(\n"
                 "            local_sumexp_ptr=draft_local_sumexp_ptr,\n"
                 "            local_max_ptr=draft_local_max_ptr,\n"
                 "            local_max_stride=draft_local_max_stride,\n"
                 "            local_sumexp_stride=draft_local_sumexp_stride,\n"
                 "            logit_idx=logit_idx,\n"
                 "            vocab_num_blocks=vocab_num_blocks,\n"
                 "            PADDED_VOCAB_NUM_BLOCKS=PADDED_VOCAB_NUM_BLOCKS,\n        )\n",
                 id="t6-draft-lse-by-keyword"),
    # the tests that a store, the draft log-probability and DSpark's scatter run whenever
    # (unconditional beside guarded_by: u1-u4), written another way
    pytest.param(GUMBEL, "    if logits_cache_ptr is not None:\n",
                 "    if None is not logits_cache_ptr:\n", id="t7-cache-test-reversed"),
    pytest.param(DSPARK, "        if self._d2t_scatter_index is not None:\n",
                 "        if (self._d2t_scatter_index is not None):\n",
                 id="t8-dspark-scatter-test-parenthesised"),
    # the logits' shape or size read (not a view: dspark-draw-logits-handed-to-nothing-else),
    # on the comment's line (a line added would move the citations below it)
    pytest.param(DSPARK, DSPARK_DRAW, '        logger.debug("%d rows", logits.shape[0])  '
                 + DSPARK_DRAW.lstrip(), id="t9-dspark-logits-shape-logged"),
    pytest.param(DSPARK, DSPARK_DRAW, '        logger.debug("%d rows", logits.size(0))  '
                 + DSPARK_DRAW.lstrip(), id="t10-dspark-logits-size-logged"),
    pytest.param(DSPARK, DSPARK_DRAW, "        num_rows = logits.shape[0]  " + DSPARK_DRAW.lstrip(),
                 id="t11-dspark-logits-rows-bound"),
    # the grammar output handed to sample by keyword (runner-samples-with-grammar-output)
    pytest.param(RUNNER, "            hidden_states, input_batch, grammar_output\n        )\n",
                 "            hidden_states, input_batch, grammar_output=grammar_output\n        )\n",
                 id="t12-sample-given-the-grammar-output-by-keyword"),
    # a module helper that allocates the draft cache only under the probabilistic test, and
    # its call on an existing line (draft-logits-allocated-nowhere-else: the guard is read
    # in the helper itself)
    pytest.param(SPECULATOR, (WATERMARKER, SPECULATOR_END), (
        WATERMARKER.rstrip("\n") + "; _alloc_draft_cache(self, self.speculative_config, (1, 1))\n",
        SPECULATOR_END + "\n\ndef _alloc_draft_cache(spec, cfg, shape):\n"
        '    if cfg.draft_sample_method == "probabilistic":\n'
        "        spec.draft_logits = torch.zeros(shape)\n"),
        id="t13-guarded-module-helper-allocates-the-draft-cache"),
    # the chunk's _verify call and __call__'s _verify_in_chunks call by keyword, in reverse
    # order (verify-in-chunks-passes-chunk-rows, sampler-call-passes-the-batch)
    pytest.param(REJECTION, CHUNK_ARGS, reversed_lines(keywords(CHUNK_ARGS, CHUNK_NAMES)),
                 id="t14-a-chunk-verified-by-keyword-in-reverse"),
    pytest.param(REJECTION, CHUNKS_CALL_ARGS, reversed_lines(keywords(CHUNKS_CALL_ARGS, CHUNKS_CALL_NAMES)),
                 id="t15-chunks-called-by-keyword-in-reverse"),
    # DSpark's per-step draws by keyword (dspark-draws-each-step-in-its-place and its top-k twin)
    pytest.param(DSPARK, "+ bias\n" + STEP_DRAW, "+ bias\n" + STEP_DRAW_BY_KEYWORD,
                 id="t16-dspark-draws-each-step-by-keyword"),
    pytest.param(DSPARK, "draft_indices[:, i],\n            )\n" + STEP_DRAW,
                 "draft_indices[:, i],\n            )\n" + STEP_DRAW_BY_KEYWORD,
                 id="t17-dspark-topk-draws-each-step-by-keyword"),
    # the sampling parameters applied by keyword, in reverse order (R18's false alarm)
    pytest.param(REJECTION, PROCESSING_ARGS, reversed_lines(keywords(PROCESSING_ARGS, PROCESSING_NAMES)),
                 id="t18-sampling-params-applied-by-keyword-in-reverse"),
    # the grammar mask's arguments by keyword, in reverse order (R18's false alarm)
    pytest.param(RUNNER, MASK_ARGS, reversed_lines(keywords(MASK_ARGS, MASK_NAMES)),
                 id="t19-grammar-mask-by-keyword-in-reverse"),
]

# Equivalent rewrites an adversarial review (session 22) found failing checks, kept as
# data beside the wiring mutations: tests/data/pp1_harmless_edits.json.
HARMLESS += edits_from_data("pp1_harmless_edits.json")

# Claim-preserving edits inside a span the audit quotes as text (an unpinned file, a text
# anchor): the rule keeps its status, the quotation is no longer found. A text anchor
# cannot tell a reworded line from a removed one; only an invariant anchor could, and no
# rule's match spans exactly the quoted lines (4943-4950 is the lookup and its `if`).
QUOTED = [
    pytest.param(LEGACY, "                logger.warning(\n                    \"Missing cached",
                 "                logger.warning_once(\n                    \"Missing cached",
                 id="l1-legacy-warning-once"),
    pytest.param(LEGACY, (ROW_MAP, ROW_LOOKUP), (ROW_MAP.replace("row_by_req_id", "row_of_req"),
                                                 ROW_LOOKUP.replace("row_by_req_id", "row_of_req")),
                 id="l3-legacy-row-map-renamed"),
    pytest.param(LEGACY, ROW_LOOKUP, ROW_LOOKUP.replace("(req_id)", "(req_id, None)"),
                 id="l7-legacy-lookup-default-none-spelled-out"),
]


def replace_once(old: str | tuple[str, ...], new: str | tuple[str, ...]) -> Callable[[str], str]:
    """The edit: each ``old`` must occur exactly once (a mutation cannot silently miss); a
    tuple is several edits of the file made together (a parameter and its argument moved)."""
    pairs = list(zip((old,) if isinstance(old, str) else old, (new,) if isinstance(new, str) else new,
                     strict=True))

    def once(text: str) -> str:
        for before, after in pairs:
            assert text.count(before) == 1, f"{before[:60]!r} occurs {text.count(before)} times"
            text = text.replace(before, after)
        return text

    return once


@pytest.fixture(scope="module")
def pp1() -> Manifest:
    return load_manifest(PP1)


def statuses(manifest: Manifest, target: Path) -> dict[str, str]:
    with open_target(target, manifest.package) as source:
        return {c.id: c.status.value for c in audit(manifest, source).checks}


@pytest.fixture(scope="module")
def unmodified(pp1: Manifest, vllm_tree: Path) -> dict[str, str]:
    return statuses(pp1, vllm_tree)


@pytest.mark.parametrize(("path", "old", "new", "expected"), MUTATIONS)
def test_an_edit_that_breaks_a_claim_turns_exactly_its_checks(
    pp1: Manifest, unmodified: dict[str, str], tree_copy: Path,
    edit: Callable[[Path, Callable[[str], str]], None],
    path: str, old: str, new: str, expected: dict[str, str],
) -> None:
    edit(tree_copy / path, replace_once(old, new))
    after = statuses(pp1, tree_copy)
    assert set(after) == set(unmodified)
    changed = {cid: status for cid, status in after.items() if unmodified[cid] != status}
    assert changed == expected
    for cid in expected:  # each was green (or drift, found again) before the edit
        assert unmodified[cid] in ("pass", "drift"), cid


@pytest.mark.parametrize(("path", "old", "new"), QUOTED)
def test_an_edit_in_a_quoted_span_fails_only_its_quotation(
    pp1: Manifest, unmodified: dict[str, str], tree_copy: Path,
    edit: Callable[[Path, Callable[[str], str]], None], path: str,
    old: str | tuple[str, ...], new: str | tuple[str, ...],
) -> None:
    edit(tree_copy / path, replace_once(old, new))
    after = statuses(pp1, tree_copy)
    assert {cid: status for cid, status in after.items() if unmodified[cid] != status} == {
        "legacy-missing-request-fallback": "fail"}


@pytest.mark.parametrize(("path", "old", "new"), HARMLESS)
def test_an_edit_that_keeps_every_claim_changes_no_status(
    pp1: Manifest, unmodified: dict[str, str], tree_copy: Path,
    edit: Callable[[Path, Callable[[str], str]], None], path: str,
    old: str | tuple[str, ...], new: str | tuple[str, ...],
) -> None:
    edit(tree_copy / path, replace_once(old, new))
    after = statuses(pp1, tree_copy)
    assert {cid: status for cid, status in after.items() if unmodified[cid] != status} == {}
