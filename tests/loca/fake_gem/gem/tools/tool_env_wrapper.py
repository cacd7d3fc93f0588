"""Fake of gem.tools.tool_env_wrapper.ToolEnvWrapperOpenAI with upstream's step_openai semantics:
at the cap nothing runs and the observation is "[]"; claim_done → env.step() → terminated."""

import json


class ToolEnvWrapperOpenAI:
    def __init__(self, env, tools, tool_reward=0.0, tool_success_reward=0.1, max_tool_uses=10):
        self.env, self.tools, self.max_tool_uses, self.tool_use_counter = env, tools, max_tool_uses, 0

    def reset(self, seed=None):
        obs, info = self.env.reset(seed=seed)
        return obs, info, obs, [t.get_tool_function() for t in self.tools]

    def step_openai(self, action, verbose=False):
        results, done_obs = [], None
        if self.tool_use_counter < self.max_tool_uses:
            for call in action["data"]:
                args = json.loads(call["function"]["arguments"])
                for tool in self.tools:
                    parsed, error, obs, name, cid = tool.execute_tool(call["function"]["name"], args, call["id"])
                    if parsed:
                        results.append({"role": "tool", "tool_call_id": cid, "content": obs})
                        self.tool_use_counter += 1
                        if not error and "claim_done" in name:
                            done_obs = obs
                        break
                else:
                    results.append({"role": "tool", "tool_call_id": call["id"], "content": "Tool not found"})
        if done_obs is not None:
            _o, reward, terminated, truncated, info = self.env.step(action)
            return done_obs, reward, terminated, truncated, info
        return json.dumps(results), 0.0, False, False, {}
