"""The five methods, one package each: the parts that belong to one paper.

Each ``kgreason.methods.<name>`` holds its action space, rewards, advantage estimator,
teachers, cold start and gold policy, and registers them when imported: its rewards and
estimator at once, its action space and gold policy without importing them (they load
rankers), every other name of the package on first use (``make_env(name, kb)``,
``kgreason.rewards.get``, ``kgreason.rl.get_advantage`` find them). The generic kernel
(``kb``, ``envs``, ``rewards``, ``rl``, ``rankers``, ``rollout``, ``training``, ``eval``,
``models``, ``data``) never imports a method; :func:`kgreason.registry.load_methods`
discovers them, and a method of one's own is added through the ``kgreason.methods``
entry point of its distribution (docs/architecture.md).

| package | paper |
|---|---|
| ``kg_r1`` | KG-R1 (Song et al.) |
| ``kbqa_r1`` | KBQA-R1 |
| ``isp_dtpo`` | Interactive Semantic Parsing / DTPO |
| ``knowcoder_a1`` | KnowCoder-A1 |
| ``kg_reasoner`` | KG-Reasoner |
"""
