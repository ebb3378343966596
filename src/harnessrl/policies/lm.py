"""Hugging Face causal LM policy with optional PEFT LoRA.

    policy = LMPolicy.from_config(LMConfig(model="runs/tiny", lora_rank=8))
    actions = policy.act(states)            # one KV-cached batch for the whole group
    with policy.reference():                # the same model with the adapter disabled
        ref = token_logprobs(policy.model, ids, attn, mask)   # policies/scoring.py

- The reference policy for KL is the base model with the LoRA adapter disabled: no second
  copy of the weights. Without LoRA (full fine-tuning) a frozen copy is made on first use.
- Multi-turn contexts are token ids appended turn by turn (`chat.ChatEncoder`); a turn's
  `Action.token_ids` are the new observation tokens (mask 0) then the generated tokens
  (mask 1), so the concatenated turns of an episode are exactly the context the model saw.
  When a harness rewrites history the context restarts from a kept prefix; those restarts
  are collected per episode (`pop_resets`) and trainers store them with the episode.
- Behaviour log-probs are under the temperature-scaled full distribution (generation.py);
  `token_logprobs` recomputes them the same way for the ratio.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from pydantic import Field

from harnessrl.config import Config, ConfigError
from harnessrl.models import resolve as resolve_model
from harnessrl.policies.base import Action, AgentState, Policy
from harnessrl.policies.chat import ChatEncoder, EpisodeContext
from harnessrl.policies.generation import GenerationEngine, HFEngine, SamplingParams
from harnessrl.policies.lm_load import (  # noqa: F401  (re-exported: callers import them from here)
    GENERIC_TOKENIZERS, _quiet_transformers, check_model_path, load_tokenizer, resolve_device, resolve_dtype,
    save_tokenizer)
from harnessrl.policies.precision import Resolved, count_params, lora_compute_like_input
from harnessrl.policies.precision import resolve as resolve_precision
from harnessrl.policies.sampling import RowSpec
from harnessrl.policies.scoring import TokenScores, token_logprobs  # noqa: F401  (re-exported)

# peft asks transformers a deprecated question on every adapter load; the answer is right, the noise is not ours
warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)


class LMConfig(Config):
    """A causal LM policy: model, optional LoRA adapter, sampling and token budgets."""

    model: str = Field(..., description="A model name (`harnessrl models list`), a local model directory, "
                                        "or a model id already in the Hugging Face cache.")
    adapter: str | None = Field(None, description="A saved PEFT adapter directory to load on top of the model.")
    lora_rank: int = Field(0, ge=0, description="LoRA rank; 0 = train all weights (small models only).")
    lora_alpha: float | None = Field(None, gt=0, description="LoRA alpha; default 2 x rank.")
    lora_dropout: float = Field(0.0, ge=0, lt=1)
    lora_target_modules: list[str] | str = Field("all-linear", description="Module names, or 'all-linear'.")
    temperature: float = Field(1.0, ge=0, description="Sampling temperature (0 = greedy); log-probs use the same.")
    top_p: float = Field(1.0, gt=0, le=1)
    top_k: int = Field(0, ge=0)
    max_new_tokens: int = Field(128, ge=1, description="Token budget of one turn.")
    max_context_tokens: int | None = Field(None, ge=16, description="Episode token budget; default the model's window.")
    device: str = Field("auto", description="auto | cpu | cuda | cuda:N")
    decode_threads: int | None = Field(1, ge=1, description="CPU threads for one-token decode steps (None: the "
                                       "process's setting); one is fastest for small models, and far faster on a "
                                       "loaded machine (policies/generation.cpu_threads)")
    dtype: str = Field("auto", description="Model-load dtype: auto | float32 | bfloat16 | float16 (auto: `precision` "
                       "decides; policies/precision.py)")
    precision: Literal["auto", "fp32", "bf16"] = Field(
        "auto", description="Arithmetic of the frozen base weights and activations in sampling and updates; LoRA "
        "weights, optimizer state, log-probs and the loss stay fp32. auto: bf16 on a CPU with bf16 instructions for a "
        "LoRA run of a real model (>= 50M parameters), bf16 on a GPU that has it, fp32 otherwise (policies/precision.py)")
    prefix_cache_mb: int = Field(0, ge=0, description="MB of earlier turns' keys/values kept, so a turn prefills only "
                                 "new tokens; emptied when weights change (policies/prefix_cache.py). 0 = off.")
    gradient_checkpointing: bool = Field(False, description="Recompute activations in the backward pass: memory "
                                         "for time (real models, long episodes). Sampling is unaffected.")


class LMPolicy(Policy):
    """A causal LM acting through harnesses, one batched generation per turn."""

    def __init__(self, model: torch.nn.Module, tokenizer: Any, cfg: LMConfig, engine: GenerationEngine | None = None):
        self.model, self.tokenizer, self.cfg = model, tokenizer, cfg
        self.policy_id = f"lm:{Path(cfg.model).name or cfg.model}" + (f"+lora{cfg.lora_rank}" if cfg.lora_rank else "")
        self.encoder = ChatEncoder(tokenizer, name=f"model {cfg.model!r}")
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        if pad is None:
            raise ConfigError(f"model {cfg.model!r}: the tokenizer has neither a pad nor an eos token")
        self.pad_token_id = int(pad)
        self.engine = engine or HFEngine(model, self.pad_token_id, decode_threads=cfg.decode_threads,
                                         prefix_cache_mb=cfg.prefix_cache_mb)
        self.stop_token_ids = self._stop_tokens()
        window = getattr(model.config, "max_position_embeddings", None) or 4096
        self.max_context = min(cfg.max_context_tokens or window, window)
        self.generator = torch.Generator(device="cpu" if self.device.type == "cpu" else self.device)
        self.generator.manual_seed(0)
        self.run_seed = 0  # with the episode key, seed and call index, seeds each row's stream (sampling.py)
        self._finished: dict[str, list[tuple[int, int]]] = {}
        self._ref_model: torch.nn.Module | None = None
        self.precision: Resolved | None = None  # what from_config resolved (None: a model built by the caller)

    # -- construction ------------------------------------------------------------------

    @classmethod
    def from_config(cls, cfg: LMConfig) -> "LMPolicy":
        from transformers import AutoModelForCausalLM

        _quiet_transformers()
        path = resolve_model(cfg.model)  # a name (smollm2-135m) -> its installed folder
        check_model_path(path)
        tokenizer = load_tokenizer(path)
        if not getattr(tokenizer, "chat_template", None):
            ChatEncoder(tokenizer, name=f"model {cfg.model!r}")  # raises the chat-template error
        device = resolve_device(cfg.device)
        lora = bool(cfg.lora_rank or cfg.adapter)
        prec = resolve_precision(cfg.precision, cfg.dtype, device, lora=lora,
                                 n_params=count_params(path) if Path(path).is_dir() else None)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=prec.dtype).to(device)
        if cfg.adapter:
            from peft import PeftModel

            if not Path(cfg.adapter, "adapter_config.json").exists():
                raise ConfigError(f"adapter {cfg.adapter!r}: no adapter_config.json there (save one with LMPolicy.save)")
            model = PeftModel.from_pretrained(model, cfg.adapter, is_trainable=True)
        elif cfg.lora_rank:
            from peft import LoraConfig, get_peft_model

            lora = LoraConfig(r=cfg.lora_rank, lora_alpha=cfg.lora_alpha or 2 * cfg.lora_rank,
                              lora_dropout=cfg.lora_dropout, target_modules=cfg.lora_target_modules,
                              task_type="CAUSAL_LM")
            model = get_peft_model(model, lora)
        if lora and prec.dtype != torch.float32:
            _trainable_in_fp32(model)  # full fine-tuning in bf16 is for sampling only: the trainer refuses it
            lora_compute_like_input(model)
        if cfg.gradient_checkpointing:
            # non-reentrant: works with frozen base weights (LoRA) without forcing input grads
            kwargs = {"use_reentrant": False}
            if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5 (the old name is deprecated)
                model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
            else:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
        policy = cls(model, tokenizer, cfg)
        policy.precision = prec
        return policy

    def _stop_tokens(self) -> tuple[int, ...]:
        ids = set()
        for source in (self.tokenizer.eos_token_id, getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)):
            if isinstance(source, int):
                ids.add(source)
            elif isinstance(source, (list, tuple)):
                ids.update(int(x) for x in source)
        im_end = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        if isinstance(im_end, int) and im_end != self.tokenizer.unk_token_id:
            ids.add(im_end)
        return tuple(sorted(ids))

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def is_lora(self) -> bool:
        return hasattr(self.model, "disable_adapter") and hasattr(self.model, "peft_config")

    @property
    def sampling(self) -> SamplingParams:
        c = self.cfg
        return SamplingParams(c.max_new_tokens, c.temperature, c.top_p, c.top_k, self.stop_token_ids)

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def reseed(self, seed: int) -> None:
        """Make the next samples a function of `seed` and each episode alone (trainers reseed every
        update): every row of a batch draws from its own stream (policies/sampling.py)."""
        self.generator.manual_seed(int(seed))
        self.run_seed = int(seed)

    # -- reference policy ----------------------------------------------------------------

    @contextmanager
    def reference(self) -> Iterator[torch.nn.Module]:
        """Yield the reference model: the adapter disabled (LoRA), or a frozen copy of the start weights."""
        if self.is_lora:
            with self.model.disable_adapter():
                yield self.model
            return
        if self._ref_model is None:
            self._ref_model = copy.deepcopy(self.model).eval().requires_grad_(False)
        yield self._ref_model

    def freeze_reference(self) -> None:
        """Snapshot the current weights as the reference (full fine-tuning only; LoRA needs nothing)."""
        if not self.is_lora:
            self._ref_model = copy.deepcopy(self.model).eval().requires_grad_(False)

    # -- acting ------------------------------------------------------------------------

    def prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        """Tokens the first prompt of an episode takes (pre-flight checks use it)."""
        return len(self.encoder.encode_chat(messages))

    @torch.no_grad()
    def act(self, states: list[AgentState]) -> list[Action]:
        actions: list[Action | None] = [None] * len(states)
        todo, prompts, news, rows = [], [], [], []
        for i, s in enumerate(states):
            ctx: EpisodeContext = s.cache.setdefault("lm", EpisodeContext())
            turn_index = s.cache.get("lm_calls", 0)
            s.cache["lm_calls"] = turn_index + 1
            enc = self.encoder.update(ctx, s.messages)
            if enc.rewritten:
                ctx.resets.append((turn_index, enc.keep))
            if len(enc.ids) >= self.max_context:
                n = len(enc.new_ids)
                actions[i] = Action(text="", token_ids=np.asarray(enc.new_ids, np.int32), logprobs=np.zeros(n, np.float32),
                                    loss_mask=np.zeros(n, np.int8), prompt_tokens=len(enc.ids), truncated=True,
                                    info={"stop": "token_limit", "keep": enc.keep})
                continue
            todo.append(i)
            prompts.append(list(enc.ids))
            news.append(enc)
            # its own stream: what this call samples does not depend on who else is in the batch
            rows.append(RowSpec.for_call(self.run_seed, s.episode_key, s.seed, turn_index, self._cap(s)))
        if todo:
            completions = self.engine.generate(prompts, self.sampling, self.generator, rows=rows)
            for i, prompt, enc, comp in zip(todo, prompts, news, completions):
                actions[i] = self._action(states[i], prompt, enc, comp)
        return actions  # type: ignore[return-value]

    def _cap(self, state: AgentState) -> int | None:
        """A call's own `max_tokens` when it is below this policy's budget (which always wins above it)."""
        return state.max_tokens if state.max_tokens is not None and state.max_tokens < self.cfg.max_new_tokens else None

    def _action(self, state: AgentState, prompt: list[int], enc: Any, comp: Any) -> Action:
        room = self.max_context - len(prompt)
        gen, lps, finished = comp.token_ids[:room], comp.logprobs[:room], comp.finished and len(comp.token_ids) <= room
        body = gen[:-1] if finished else gen
        text = self.encoder.decode(body.tolist())
        ctx_text = text + (self.encoder.decode(gen[-1:].tolist()) if finished else "")
        self.encoder.append_generated(state.cache["lm"], gen.tolist(), ctx_text)
        n_new = len(enc.new_ids)
        return Action(
            text=text,
            token_ids=np.concatenate([np.asarray(enc.new_ids, np.int32), gen.astype(np.int32)]),
            logprobs=np.concatenate([np.zeros(n_new, np.float32), lps.astype(np.float32)]),
            loss_mask=np.concatenate([np.zeros(n_new, np.int8), np.ones(len(gen), np.int8)]),
            prompt_tokens=len(prompt),
            truncated=not finished,
            info={"temperature": self.cfg.temperature, "keep": enc.keep, "finished": finished,
                  "max_new_tokens": self._cap(state) or self.cfg.max_new_tokens},
        )

    @torch.no_grad()
    def score_replies(self, conversations: list[list[dict[str, str]]], replies: list[str], *,
                      reference: bool = False, temperature: float = 1.0, with_end: bool = True) -> np.ndarray:
        """log pi(reply | conversation) of whole replies, the end-of-turn token included unless with_end=False.

        Compares candidate actions (log-odds) as the model would produce them at this point of
        the conversation; reference=True scores under the reference policy. Returns (N,) float64.
        """
        end = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        if not isinstance(end, int) or end == self.tokenizer.unk_token_id:
            end = self.tokenizer.eos_token_id
        rows, targets = [], []
        for messages, reply in zip(conversations, replies, strict=True):
            prompt = self.encoder.encode_chat(messages)
            answer = self.encoder.encode_text(reply) + ([int(end)] if with_end else [])
            rows.append(prompt + answer)
            targets.append([0] * len(prompt) + [1] * len(answer))
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad_token_id, dtype=torch.long)
        att, tgt = torch.zeros_like(ids), torch.zeros_like(ids)
        for i, (r, t) in enumerate(zip(rows, targets)):
            ids[i, : len(r)], att[i, : len(r)], tgt[i, : len(r)] = torch.tensor(r), 1, torch.tensor(t)
        ids, att, tgt = ids.to(self.device), att.to(self.device), tgt.to(self.device)
        if reference:
            with self.reference() as model:
                scores = token_logprobs(model, ids, att, tgt, temperature)
        else:
            scores = token_logprobs(self.model, ids, att, tgt, temperature)
        return scores.logprobs.sum(-1).double().cpu().numpy()

    def end_episode(self, state: AgentState) -> None:
        ctx = state.cache.get("lm")
        if ctx is not None and ctx.resets:
            self._finished[state.episode_key] = list(ctx.resets)
        state.cache.clear()

    def pop_resets(self, episode_key: str) -> list[tuple[int, int]]:
        """(turn index, tokens kept) for each turn whose context restarted after a history rewrite."""
        return self._finished.pop(episode_key, [])

    # -- persistence -------------------------------------------------------------------

    def save(self, out_dir: str | Path) -> Path:
        """LoRA: the adapter only (PEFT format). Full fine-tuning: model + tokenizer."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(out)
        if not self.is_lora:
            save_tokenizer(self.tokenizer, out)
        return out

    def save_merged(self, out_dir: str | Path) -> Path:
        """A full model (LoRA merged into the weights) + tokenizer: a new starting point, e.g. after SFT.

        Merging consumes the adapter: use this policy no further after the call.
        """
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        if self.is_lora and next(self.model.parameters()).dtype != torch.float32:
            self.model.float()  # a bf16 base: merge the fp32 adapter in fp32 and save fp32, as an fp32 run would
        model = self.model.merge_and_unload() if self.is_lora else self.model
        model.save_pretrained(out)
        save_tokenizer(self.tokenizer, out)
        return out

    def close(self) -> None:
        self._ref_model = None


def _trainable_in_fp32(model: torch.nn.Module) -> None:
    """Over a bf16 base, the weights that train (LoRA's A and B) stay fp32: PEFT does this already
    (autocast_adapter_dtype); this makes it a rule rather than a library default. The frozen GEMMs run in
    bf16, and so do the adapter's products (`precision.lora_compute_like_input`: weights cast, not activations)."""
    for p in model.parameters():
        if p.requires_grad and p.dtype != torch.float32:
            p.data = p.data.float()


class TeacherForcing(Policy):
    """Another policy's replies encoded as the LM would have produced them (demonstrations for SFT).

    Each reply is tokenised and closed with the stop token, with the same incremental context
    bookkeeping as `LMPolicy.act`, so demonstration episodes have the token layout of LM
    episodes (log-probs are 0: there is no behaviour distribution).
    """

    def __init__(self, inner: Policy, lm: LMPolicy):
        self.inner, self.lm = inner, lm
        self.policy_id = f"{inner.policy_id}>tokens"
        self.privileged = inner.privileged  # the demonstrator (an oracle) plans from the task; the LM only encodes
        self.stop = lm.stop_token_ids[0] if lm.tokenizer.eos_token_id is None else int(lm.tokenizer.eos_token_id)

    def act(self, states: list[AgentState]) -> list[Action]:
        out = []
        for s, a in zip(states, self.inner.act(states)):
            ctx: EpisodeContext = s.cache.setdefault("lm", EpisodeContext())
            turn_index = s.cache.get("lm_calls", 0)
            s.cache["lm_calls"] = turn_index + 1
            enc = self.lm.encoder.update(ctx, s.messages)
            if enc.rewritten:  # as LMPolicy.act: a history rewrite restarts the row (pop_resets)
                ctx.resets.append((turn_index, enc.keep))
            prompt_len = len(enc.ids)
            gen, text = self.lm.encoder.encode_text(a.text) + [self.stop], a.text
            cap = self.lm._cap(s)  # a call's max_tokens: the LM would have been cut there, so the demonstration is
            truncated = cap is not None and len(gen) > cap
            if truncated:
                gen = gen[:cap]
                text = self.lm.encoder.decode(gen)
            self.lm.encoder.append_generated(ctx, gen, text + ("" if truncated else self.lm.encoder.decode([self.stop])))
            n_new = len(enc.new_ids)
            out.append(Action(
                text=text,
                token_ids=np.asarray(enc.new_ids + gen, np.int32),
                logprobs=np.zeros(n_new + len(gen), np.float32),
                loss_mask=np.concatenate([np.zeros(n_new, np.int8), np.ones(len(gen), np.int8)]),
                prompt_tokens=prompt_len,
                truncated=truncated,
                info={"keep": enc.keep, "max_new_tokens": cap or self.lm.cfg.max_new_tokens},
            ))
        return out

    def end_episode(self, state: AgentState) -> None:
        ctx = state.cache.get("lm")
        if ctx is not None and ctx.resets:
            self.lm._finished[state.episode_key] = list(ctx.resets)
        self.inner.end_episode(state)
