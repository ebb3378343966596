"""Real agent programs at run time: their installation into hashed environments (install.py) and
how one runs non-interactively inside an episode's sandbox against a model endpoint (launch.py).
What a program is (its pin, its launch argv and files, its tool table) is its module in
`harnessrl.programs`; registry.py is a view of it under the old names. Sits just below `harness`:
it may import programs, tasks, config and fileio, never harness, policies or rollout."""
