"""One rank of the vLLM server-mode lockstep test (run by torchrun from test_trl_vllm_lockstep.py).

The vLLM server is an external process that needs a GPU; `EchoServer` stands in for its client
(the completion of a prompt is the prompt reversed, then the stop token) so that what is under
test — the ranks' rounds, gathering, slicing and draining in `VLLMEngine` — runs for real over
torch.distributed (gloo).
"""

import json
import sys
from types import SimpleNamespace

import torch.distributed
from accelerate import Accelerator

from harnessrl.engines.trl_vllm import VLLMEngine
from harnessrl.policies.generation import SamplingParams

STOP = 99


class EchoServer:
    def __init__(self):
        self.requests = []

    def generate(self, prompts, n, temperature, top_p, top_k, max_tokens, logprobs, generation_kwargs):
        self.requests.append(len(prompts))
        return {"completion_ids": [list(reversed(p)) + [STOP] for p in prompts],
                "logprobs": [[[-0.1 * (i + 1)] for i in range(len(p) + 1)] for p in prompts]}


def main(out: str) -> None:
    acc = Accelerator(cpu=True)
    server = EchoServer()
    trainer = SimpleNamespace(accelerator=acc, vllm_generation=SimpleNamespace(mode="server", vllm_client=server))
    engine = VLLMEngine(trainer)
    r = acc.process_index
    params = SamplingParams(max_new_tokens=8, stop_token_ids=(STOP,))
    # rank 0's episodes take 3 turns (3, 2, then 1 live prompt); rank 1's end after 1 turn
    turns = [[[1, 2], [3, 4, 5], [6]], [[7, 8]], [[9]]] if r == 0 else [[[10, 11, 12], [13]]]
    got = []
    for prompts in turns:
        got.append([c.token_ids.tolist() for c in engine.generate(prompts, params)])
    engine.drain()
    with open(f"{out}/rank{r}.json", "w") as f:
        json.dump({"turns": turns, "got": got, "requests": server.requests}, f)
    # leave the process group before exit: a gloo thread still alive at interpreter exit aborts the
    # process ("terminate called without an active exception"), which torchrun reports as a failure
    acc.wait_for_everyone()
    acc.end_training()
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
