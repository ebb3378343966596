"""The PPO actor-critic: a policy head plus one of the RL core's critics (shared, conditioned, multihead).

network="mlp":    separate tanh MLPs for actor and critic on the flat observation (cleanrl ppo.py).
network="impala": a shared IMPALA CNN trunk (Espeholt et al. 2018, as in cleanrl's procgen
                  script) whose 256 features feed a linear policy head and the critic.
network="nature-small": the same, with the 3-layer strided CNN of Mnih et al. 2015 at half width
                  (16, 32, 32 channels, 256 features): about 1/35 of the IMPALA CNN's CPU cost per
                  sample, for Procgen runs that must fit a CPU budget (it generalises worse; Cobbe et al. 2019).

Discrete actions use a categorical policy; Box actions a diagonal Gaussian with a
state-independent log-std (cleanrl ppo_continuous_action.py). All shapes: B = batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from harnessrl.rl.critics import layer_init, make_critic, mlp

LOG_2PI = math.log(2 * math.pi)


class ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv0 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.conv1(F.relu(self.conv0(F.relu(x))))


class ImpalaCNN(nn.Module):
    """(B, C, H, W) uint8 images -> (B, 256) features: 3 conv stacks (16, 32, 32) with 2 residual blocks each."""

    def __init__(self, obs_shape: Sequence[int], channels: Sequence[int] = (16, 32, 32), out_dim: int = 256):
        super().__init__()
        c, h, w = obs_shape
        stacks: list[nn.Module] = []
        for out in channels:
            stacks += [nn.Conv2d(c, out, 3, padding=1), nn.MaxPool2d(3, stride=2, padding=1),
                       ResidualBlock(out), ResidualBlock(out)]
            c, h, w = out, (h + 1) // 2, (w + 1) // 2
        self.stacks = nn.Sequential(*stacks)
        self.fc = layer_init(nn.Linear(c * h * w, out_dim))
        self.out_dim = out_dim

    def forward(self, x: Tensor) -> Tensor:
        x = self.stacks(x.float() / 255.0)
        return F.relu(self.fc(F.relu(x).flatten(1)))


class NatureCNN(nn.Module):
    """(B, C, H, W) uint8 images -> (B, out_dim) features: conv 8x8/4, 4x4/2, 3x3/1 and a linear layer (Mnih et al. 2015).

    Strides 4 and 2 shrink a 64x64 Procgen frame to 6x6 after two layers, which is what makes it cheap:
    the IMPALA CNN runs its first residual blocks at 32x32."""

    def __init__(self, obs_shape: Sequence[int], channels: Sequence[int] = (16, 32, 32), out_dim: int = 256):
        super().__init__()
        c, h, w = obs_shape
        layers: list[nn.Module] = []
        for out, k, stride in zip(channels, (8, 4, 3), (4, 2, 1)):
            if h < k or w < k:
                raise ValueError(f"network=nature-small needs images of at least 36x36; got {tuple(obs_shape)}")
            layers += [layer_init(nn.Conv2d(c, out, k, stride)), nn.ReLU()]
            c, h, w = out, (h - k) // stride + 1, (w - k) // stride + 1
        self.convs = nn.Sequential(*layers)
        self.fc = layer_init(nn.Linear(c * h * w, out_dim))
        self.out_dim = out_dim

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(self.fc(self.convs(x.float() / 255.0).flatten(1)))


IMAGE_NETWORKS = {"impala": ImpalaCNN, "nature-small": NatureCNN}


class ActorCritic(nn.Module):
    """Policy + critic for one observation/action space and num_contexts contexts."""

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, num_contexts: int, *, critic: str = "shared",
                 network: str = "mlp", hidden: Sequence[int] = (64, 64), critic_kwargs: dict | None = None):
        super().__init__()
        if not isinstance(observation_space, gym.spaces.Box):
            raise ValueError(f"PPO needs a Box observation space; got {observation_space}")
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        if not self.discrete and not isinstance(action_space, gym.spaces.Box):
            raise ValueError(f"PPO supports Discrete and Box action spaces; got {action_space}")
        n_out = int(action_space.n) if self.discrete else int(np.prod(action_space.shape))
        obs_shape = tuple(observation_space.shape)
        if network == "mlp":
            feature_dim = int(np.prod(obs_shape))
            self.trunk: nn.Module = nn.Flatten() if len(obs_shape) > 1 else nn.Identity()
            self.actor_body, width = mlp(feature_dim, hidden)
            critic_hidden: Sequence[int] = hidden
        elif network in IMAGE_NETWORKS:
            if len(obs_shape) != 3:
                raise ValueError(f"network={network} needs (C, H, W) image observations; got shape {obs_shape}")
            self.trunk = IMAGE_NETWORKS[network](obs_shape)
            feature_dim = width = self.trunk.out_dim
            self.actor_body, critic_hidden = nn.Identity(), ()
        else:
            raise ValueError(f"unknown network {network!r}; choose mlp, {' or '.join(IMAGE_NETWORKS)}")
        self.actor_head = layer_init(nn.Linear(width, n_out), std=0.01)
        self.log_std = None if self.discrete else nn.Parameter(torch.zeros(n_out))
        self.critic = make_critic(critic, feature_dim, num_contexts, hidden=critic_hidden, **(critic_kwargs or {}))
        self.num_contexts = num_contexts
        fast_ok = network == "mlp" and len(obs_shape) == 1 and all(isinstance(m, (nn.Linear, nn.Tanh)) for m in self.actor_body)
        self._fast = [(m.weight, m.bias) for m in self.actor_body if isinstance(m, nn.Linear)] if fast_ok else None

    # -- the pieces the trainer calls ------------------------------------------------------

    def features(self, obs: Tensor) -> Tensor:
        return obs if self._fast is not None else self.trunk(obs)

    def policy_out(self, feats: Tensor) -> Tensor:
        """Logits (B, n_actions) or Gaussian means (B, action_dim).

        For the tanh MLP it calls addmm/tanh on the weights directly (the same arithmetic as the
        Linear modules): module dispatch is a large share of a small network's cost."""
        if self._fast is None:
            return self.actor_head(self.actor_body(feats))
        x = feats
        for w, b in self._fast:
            x = torch.tanh(torch.addmm(b, x, w.t()))
        return torch.addmm(self.actor_head.bias, x, self.actor_head.weight.t())

    def numpy_policy(self) -> Callable[[np.ndarray], np.ndarray] | None:
        """For the tanh MLP on CPU: obs (N, D) float32 -> policy output (N, A) computed in numpy on views
        of the live weights (they follow every in-place optimiser step). A few-row forward pass in numpy
        costs a third of the torch dispatch; None when the network is not a CPU MLP."""
        if self._fast is None or self.actor_head.weight.device.type != "cpu":
            return None
        layers = [(w.detach().numpy(), b.detach().numpy()) for w, b in self._fast]
        head_w, head_b = self.actor_head.weight.detach().numpy(), self.actor_head.bias.detach().numpy()

        def forward(obs: np.ndarray) -> np.ndarray:
            x = obs
            for w, b in layers:
                x = np.tanh(x @ w.T + b)
            return x @ head_w.T + head_b
        return forward

    def numpy_sample(self, out: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """`sample` in numpy with a numpy Generator (Gumbel-max for categorical, Gaussian noise for Box)."""
        if self.discrete:
            return (out - np.log(rng.standard_exponential(out.shape, dtype=np.float32))).argmax(-1)
        std = np.exp(self.log_std.detach().numpy())
        return (out + std * rng.standard_normal(out.shape, dtype=np.float32)).astype(np.float32)

    def value(self, feats: Tensor, context: Tensor, check: bool = True) -> Tensor:
        return self.critic(feats, context, check)

    def sample(self, out: Tensor, generator: torch.Generator) -> Tensor:
        """Draw actions from the policy output with the trainer's generator (reproducible).

        Categorical by Gumbel-max, argmax(logits - log E) with E ~ Exp(1): exact, and cheaper
        than torch.multinomial for a few rows."""
        # noise comes from the trainer's CPU generator (reproducible on any device), then moves to out's device
        if self.discrete:
            noise = torch.empty(out.shape, dtype=out.dtype).exponential_(generator=generator).log_()
            return (out - (noise if out.device.type == "cpu" else noise.to(out.device))).argmax(-1)
        noise = torch.randn(out.shape, generator=generator, dtype=out.dtype)
        return out + self.log_std.exp() * (noise if out.device.type == "cpu" else noise.to(out.device))

    def mode(self, out: Tensor) -> Tensor:
        """The most likely action (deterministic evaluation)."""
        return out.argmax(-1) if self.discrete else out

    def log_prob_entropy(self, out: Tensor, actions: Tensor) -> tuple[Tensor, Tensor]:
        """Log-probability of `actions` (B,) or (B, A) and the policy entropy, both (B,)."""
        if self.discrete:
            logp = torch.log_softmax(out, -1)
            return logp.gather(1, actions[:, None]).squeeze(1), -(logp.exp() * logp).sum(-1)
        log_std = self.log_std.expand_as(out)
        z = (actions - out) / log_std.exp()
        logp = (-0.5 * z.square() - log_std - 0.5 * LOG_2PI).sum(-1)
        entropy = (0.5 + 0.5 * LOG_2PI + log_std).sum(-1)
        return logp, entropy

    @torch.no_grad()
    def act(self, obs: Tensor, generator: torch.Generator | None = None, deterministic: bool = False) -> Tensor:
        """Actions for a batch of observations: sampled (with `generator`) or the mode."""
        out = self.policy_out(self.features(obs))
        if deterministic:
            return self.mode(out)
        return self.sample(out, generator if generator is not None else torch.Generator().manual_seed(0))

    @torch.no_grad()
    def predict_value(self, obs: Tensor, context: Tensor) -> Tensor:
        """Critic values (B,) for observations and their context ids (evaluation helper)."""
        return self.value(self.features(obs), context)
