"""Multi-turn generation through the vLLM that TRL's GRPOTrainer owns (`use_vllm=True`).

`LMPolicy` asks its engine for one batch of completions per turn (policies/generation.py); this
engine sends that batch to the trainer's vLLM, whose weights TRL syncs before every rollout:

  colocate  each training process has its own vLLM (`trainer.vllm_generation.llm`): no collectives,
            every process generates for its own episodes whenever it needs to.
  server    one `trl vllm-serve` process for all ranks, reached through the main process's client.
            Ranks take turns in lockstep rounds: in each round every rank says whether it has
            prompts (an all-reduce), the prompts are gathered on the main process, sent in one
            request, and every rank gets its slice back. A rank whose episodes have all ended keeps
            joining rounds with no prompts (`drain`) until every rank has ended, since episodes on
            different ranks end after different numbers of turns.

Behaviour log-probs are those vLLM reports for the sampled tokens; TRL asks vLLM for processed
log-probs (after temperature), the distribution the trainer scores with. Sampling is seeded from
the policy's generator, so a rollout depends on (seed, step) as with the in-process engine.

Not exercised on the CPU machine this was written on (vLLM needs a GPU); `scripts/gpu_check.sh`
runs the colocate path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from harnessrl.config import ConfigError
from harnessrl.policies.generation import Completion, GenerationEngine, SamplingParams


class VLLMEngine(GenerationEngine):
    def __init__(self, trainer: Any):
        self.trainer = trainer
        self.vllm = trainer.vllm_generation
        self.mode = self.vllm.mode
        if self.mode == "colocate" and getattr(self.vllm, "tensor_parallel_size", 1) > 1:
            raise ConfigError("trl.use_vllm: colocated vLLM with tensor parallelism needs every rank of a TP group to "
                              "generate the same prompts, which multi-turn episodes do not; use tensor parallel size 1 "
                              "or vllm_mode=server")
        self.acc = trainer.accelerator

    def _seed(self, generator: torch.Generator | None) -> int:
        return int(torch.randint(0, 2**31 - 1, (1,), generator=generator).item())

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams,
                 generator: torch.Generator | None = None, rows: Sequence[Any] | None = None) -> list[Completion]:
        prompts = [[int(t) for t in p] for p in prompts]
        if self.mode == "colocate":
            return self._colocate(prompts, params, self._seed(generator), rows)
        out = self._round(prompts, params, self._seed(generator), active=True)
        # the server samples with one seed per round; a row's own cap is applied to what it returned
        for i, row in enumerate(rows or ()):
            cap = getattr(row, "max_new_tokens", None)
            if cap is not None and len(out[i].token_ids) > cap:
                out[i] = Completion(out[i].token_ids[:cap], out[i].logprobs[:cap], False)
        return out

    def drain(self) -> None:
        """Server mode with several ranks: join rounds without prompts until every rank is done."""
        if self.mode == "server" and self.acc.num_processes > 1:
            while self._round([], None, 0, active=False) is not None:
                pass

    # -- colocate --------------------------------------------------------------------------

    def _colocate(self, prompts: list[list[int]], params: SamplingParams, seed: int,
                  rows: Sequence[Any] | None = None) -> list[Completion]:
        from vllm import SamplingParams as VSampling

        out = []
        requests = [{"prompt_token_ids": p} for p in prompts]
        # per-row streams (policies/sampling.py): a request's seed from its row, so it ignores the batch
        seeds = [int(torch.randint(0, 2**31 - 1, (1,), generator=r.generator).item()) if r.generator is not None
                 else seed + i for i, r in enumerate(rows)] if rows else [seed + i for i in range(len(prompts))]
        caps = [min(r.max_new_tokens or params.max_new_tokens, params.max_new_tokens) for r in rows] if rows \
            else [params.max_new_tokens] * len(prompts)
        sampling = [VSampling(n=1, temperature=params.temperature, top_p=params.top_p, top_k=params.top_k or -1,
                              max_tokens=caps[i], logprobs=0, stop_token_ids=list(params.stop_token_ids),
                              seed=seeds[i]) for i in range(len(prompts))]
        for result in self.vllm.llm.generate(requests, sampling_params=sampling, use_tqdm=False):
            o = result.outputs[0]
            ids = list(o.token_ids)
            lps = [float(step[t].logprob) for step, t in zip(o.logprobs, ids)]
            out.append(self._completion(ids, lps, params))
        return out

    # -- server ----------------------------------------------------------------------------

    def _round(self, prompts: list[list[int]], params: SamplingParams | None, seed: int,
               active: bool) -> list[Completion] | None:
        if self.acc.num_processes == 1:
            return self._request(prompts, params, seed) if active else None
        from accelerate.utils import broadcast_object_list, gather_object

        flag = torch.tensor([1 if active else 0], device=self.acc.device)
        if int(self.acc.reduce(flag, reduction="sum").item()) == 0:
            return None  # every rank is draining: the rollout is over everywhere
        per_rank = gather_object([(prompts, params, seed)])  # one entry per rank, in rank order
        payload: list[Any] = [None]
        if self.acc.is_main_process:
            _, live_params, live_seed = next(e for e in per_rank if e[1] is not None)  # ranks share one policy config
            payload = [self._request([p for ps, _, _ in per_rank for p in ps], live_params, live_seed)]
        broadcast_object_list(payload, from_process=0)
        start = sum(len(ps) for ps, _, _ in per_rank[: self.acc.process_index])
        mine = payload[0][start:start + len(prompts)]
        return mine if active else []

    def _request(self, prompts: list[list[int]], params: SamplingParams, seed: int) -> list[Completion]:
        if not prompts:
            return []
        res = self.vllm.vllm_client.generate(
            prompts=prompts, n=1, temperature=params.temperature, top_p=params.top_p, top_k=params.top_k,
            max_tokens=params.max_new_tokens, logprobs=0,
            generation_kwargs={"seed": seed, "stop_token_ids": list(params.stop_token_ids)})
        return [self._completion(list(ids), [float(x[0]) for x in lps], params)
                for ids, lps in zip(res["completion_ids"], res["logprobs"], strict=True)]

    @staticmethod
    def _completion(ids: list[int], lps: list[float], params: SamplingParams) -> Completion:
        finished = bool(ids) and ids[-1] in params.stop_token_ids
        return Completion(np.asarray(ids, np.int32), np.asarray(lps, np.float32), finished)
