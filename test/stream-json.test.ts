import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineSplitter } from '../src/adapters/processes/line-splitter.ts';
import { StreamJsonParser } from '../src/adapters/worker/stream-json.ts';
import { summarizeToolInput } from '../src/adapters/worker/stream-json-fields.ts';
import { formatEventForLog } from '../src/adapters/worker/stream-log.ts';
import { parseStatusLine } from '../src/core/attempt/prompt.ts';
import type { ExitInfo } from '../src/core/attempt/worker-outcome.ts';

/** Recorded from the real CLI 2.1.330 (noisy fields removed). */
const REAL: Record<string, string> = {
  status400: String.raw`{"type":"system","subtype":"init","cwd":"/tmp/tmp.1b4uRyN11I","session_id":"fc86a768-7fbe-4f0e-8e6e-b839928139f7","model":"claude-haiku-5-5","permissionMode":"default","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.330"}
{"type":"assistant","message":{"id":"4f466311-fd9f-447f-8ca2-6a827eea3d5c","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"content":[{"type":"text","text":"API Error: 400 bad request thing"}]},"parent_tool_use_id":null,"session_id":"fc86a768-7fbe-4f0e-8e6e-b839928139f7","error":"unknown","is_api_error_message":true,"api_error_status":400,"api_error_type":"invalid_request_error"}
{"duration_api_ms":0,"stop_reason":"stop_sequence","session_id":"fc86a768-7fbe-4f0e-8e6e-b839928139f7","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"permission_denials":[],"terminal_reason":"api_error","is_error":true,"num_turns":1,"subtype":"success","api_error_status":400,"api_error_type":"invalid_request_error","result":"API Error: 400 bad request thing","type":"result","duration_ms":115}`,
  status401: String.raw`{"type":"system","subtype":"init","cwd":"/tmp/tmp.NlPZkpbnvk","session_id":"14430656-f6e8-415e-98d9-de789baa9b08","model":"claude-haiku-5-5","permissionMode":"default","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.330"}
{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":523,"error_status":401,"error":"authentication_failed","session_id":"14430656-f6e8-415e-98d9-de789baa9b08"}
{"type":"assistant","message":{"id":"fbb4b31e-3132-47ec-a840-6afa81deb7e2","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"content":[{"type":"text","text":"Invalid API key · Fix external API key"}]},"parent_tool_use_id":null,"session_id":"14430656-f6e8-415e-98d9-de789baa9b08","error":"authentication_failed","is_api_error_message":true,"api_error_status":401,"api_error_type":"authentication_error"}
{"duration_api_ms":0,"stop_reason":"stop_sequence","session_id":"14430656-f6e8-415e-98d9-de789baa9b08","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"permission_denials":[],"terminal_reason":"api_error","is_error":true,"num_turns":1,"subtype":"success","api_error_status":401,"api_error_type":"authentication_error","result":"Invalid API key · Fix external API key","type":"result","duration_ms":651}`,
  status429: String.raw`{"type":"system","subtype":"init","cwd":"/tmp/tmp.qLl5qgKpv4","session_id":"13e52bfa-df11-41e6-9bd9-773e7d196f55","model":"claude-haiku-5-5","permissionMode":"default","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.330"}
{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":2216,"error_status":429,"error":"rate_limit","session_id":"13e52bfa-df11-41e6-9bd9-773e7d196f55"}
{"type":"assistant","message":{"id":"4c22b3e9-8653-4b5a-8547-f5355134fdc9","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"content":[{"type":"text","text":"API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit"}]},"parent_tool_use_id":null,"session_id":"13e52bfa-df11-41e6-9bd9-773e7d196f55","error":"rate_limit","is_api_error_message":true,"api_error_status":429,"api_error_type":"rate_limit_error"}
{"duration_api_ms":0,"stop_reason":"stop_sequence","session_id":"13e52bfa-df11-41e6-9bd9-773e7d196f55","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"permission_denials":[],"terminal_reason":"api_error","is_error":true,"num_turns":1,"subtype":"success","api_error_status":429,"api_error_type":"rate_limit_error","result":"API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit","type":"result","duration_ms":2327}`,
  status500: String.raw`{"type":"system","subtype":"init","cwd":"/tmp/tmp.YHwIYXE2cu","session_id":"9931c1cb-54e2-46af-8d53-f14e8e468ff5","model":"claude-haiku-5-5","permissionMode":"default","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.330"}
{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":566,"error_status":500,"error":"server_error","session_id":"9931c1cb-54e2-46af-8d53-f14e8e468ff5"}
{"type":"assistant","message":{"id":"5c8b9299-1d77-4ee9-9a93-8b40dd19f3dd","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"content":[{"type":"text","text":"API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:42313)."}]},"parent_tool_use_id":null,"session_id":"9931c1cb-54e2-46af-8d53-f14e8e468ff5","error":"server_error","is_api_error_message":true,"api_error_status":500,"api_error_type":"api_error"}
{"duration_api_ms":0,"stop_reason":"stop_sequence","session_id":"9931c1cb-54e2-46af-8d53-f14e8e468ff5","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"permission_denials":[],"terminal_reason":"api_error","is_error":true,"num_turns":1,"subtype":"success","api_error_status":500,"api_error_type":"api_error","result":"API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:42313).","type":"result","duration_ms":673}`,
  status529: String.raw`{"type":"system","subtype":"init","cwd":"/tmp/tmp.7s2zDGHhVp","session_id":"dbc59ec2-bc7f-490a-9aa0-5b24206c9966","model":"claude-haiku-5-5","permissionMode":"default","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.330"}
{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":535,"error_status":529,"error":"overloaded","session_id":"dbc59ec2-bc7f-490a-9aa0-5b24206c9966"}
{"type":"assistant","message":{"id":"9ebc5a64-3100-4fcb-ba20-eb7ae4eb2a54","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"content":[{"type":"text","text":"API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:44445)."}]},"parent_tool_use_id":null,"session_id":"dbc59ec2-bc7f-490a-9aa0-5b24206c9966","error":"server_error","is_api_error_message":true,"api_error_status":529,"api_error_type":"overloaded_error"}
{"duration_api_ms":0,"stop_reason":"stop_sequence","session_id":"dbc59ec2-bc7f-490a-9aa0-5b24206c9966","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"permission_denials":[],"terminal_reason":"api_error","is_error":true,"num_turns":1,"subtype":"success","api_error_status":529,"api_error_type":"overloaded_error","result":"API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:44445).","type":"result","duration_ms":672}`,
  notLoggedIn: String.raw`{"type":"system","subtype":"init","cwd":"/tmp/tmp.qoDjrRWFAN","session_id":"b91a121b-e295-43d3-bfc7-5632f5601f03","model":"claude-haiku-5-5","permissionMode":"default","apiKeySource":"none","claude_code_version":"2.1.330"}
{"type":"assistant","message":{"id":"968837d9-ad48-4cd7-b991-835129619ff6","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"content":[{"type":"text","text":"Not logged in · Please run /login"}]},"parent_tool_use_id":null,"session_id":"b91a121b-e295-43d3-bfc7-5632f5601f03","error":"authentication_failed","is_api_error_message":true}
{"duration_api_ms":0,"stop_reason":"stop_sequence","session_id":"b91a121b-e295-43d3-bfc7-5632f5601f03","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"permission_denials":[],"terminal_reason":"api_error","is_error":true,"num_turns":1,"subtype":"success","api_error_status":null,"result":"Not logged in · Please run /login","type":"result","duration_ms":131}`,
  success: String.raw`{"type":"system","subtype":"init","cwd":"/tmp/tmp.B0E8oVwimC","session_id":"74477569-f2fc-475a-99f5-f375e1edbcbf","model":"claude-haiku-5-5","permissionMode":"acceptEdits","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.330"}
{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-5-5","content":[{"type":"text","text":"I will write the file."}],"stop_reason":null,"usage":{"input_tokens":1000,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"parent_tool_use_id":null,"session_id":"74477569-f2fc-475a-99f5-f375e1edbcbf"}
{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-5-5","content":[{"type":"tool_use","id":"toolu_1","name":"Write","input":{"file_path":"/tmp/tmp.B0E8oVwimC/x/a.txt","content":"hello\n"}}],"stop_reason":null,"usage":{"input_tokens":1000,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"parent_tool_use_id":null,"session_id":"74477569-f2fc-475a-99f5-f375e1edbcbf"}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"File created successfully at: /tmp/tmp.B0E8oVwimC/x/a.txt (file state is current in your context — no need to Read it back)"}]},"parent_tool_use_id":null,"session_id":"74477569-f2fc-475a-99f5-f375e1edbcbf"}
{"type":"assistant","message":{"id":"msg_2","type":"message","role":"assistant","model":"claude-haiku-5-5","content":[{"type":"text","text":"Wrote it.\nCOMPLETED: wrote x/a.txt"}],"stop_reason":null,"usage":{"input_tokens":1000,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"parent_tool_use_id":null,"session_id":"74477569-f2fc-475a-99f5-f375e1edbcbf"}
{"duration_api_ms":40,"stop_reason":"end_turn","session_id":"74477569-f2fc-475a-99f5-f375e1edbcbf","total_cost_usd":0.00023500000000000002,"usage":{"input_tokens":2000,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":70},"permission_denials":[],"terminal_reason":"completed","is_error":false,"num_turns":2,"subtype":"success","api_error_status":null,"result":"Wrote it.\nCOMPLETED: wrote x/a.txt","type":"result","duration_ms":163}`,
  denied: String.raw`{"type":"system","subtype":"init","cwd":"/tmp/tmp.pJLit7UAqF","session_id":"b264277b-3d13-47bd-870b-f6ecab8271f7","model":"claude-haiku-5-5","permissionMode":"default","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.330"}
{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-5-5","content":[{"type":"text","text":"I will write the file."}],"stop_reason":null,"usage":{"input_tokens":1000,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"parent_tool_use_id":null,"session_id":"b264277b-3d13-47bd-870b-f6ecab8271f7"}
{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-5-5","content":[{"type":"tool_use","id":"toolu_1","name":"Write","input":{"file_path":"/tmp/rec/x/a.txt","content":"hello\n"}}],"stop_reason":null,"usage":{"input_tokens":1000,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"parent_tool_use_id":null,"session_id":"b264277b-3d13-47bd-870b-f6ecab8271f7"}
{"type":"system","subtype":"permission_denied","tool_name":"Write","tool_use_id":"toolu_1","decision_reason_type":"workingDir","decision_reason":"Path is outside allowed working directories","message":"Claude requested permissions to write to /tmp/rec/x/a.txt, but you haven't granted it yet.","session_id":"b264277b-3d13-47bd-870b-f6ecab8271f7"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"Claude requested permissions to write to /tmp/rec/x/a.txt, but you haven't granted it yet.","is_error":true,"tool_use_id":"toolu_1"}]},"parent_tool_use_id":null,"session_id":"b264277b-3d13-47bd-870b-f6ecab8271f7"}
{"type":"assistant","message":{"id":"msg_2","type":"message","role":"assistant","model":"claude-haiku-5-5","content":[{"type":"text","text":"Wrote it.\nCOMPLETED: wrote x/a.txt"}],"stop_reason":null,"usage":{"input_tokens":1000,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"parent_tool_use_id":null,"session_id":"b264277b-3d13-47bd-870b-f6ecab8271f7"}
{"duration_api_ms":44,"stop_reason":"end_turn","session_id":"b264277b-3d13-47bd-870b-f6ecab8271f7","total_cost_usd":0.00023500000000000002,"usage":{"input_tokens":2000,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":70},"permission_denials":[{"tool_name":"Write","tool_use_id":"toolu_1","tool_input":{"file_path":"/tmp/rec/x/a.txt","content":"hello\n"}}],"terminal_reason":"completed","is_error":false,"num_turns":2,"subtype":"success","api_error_status":null,"result":"Wrote it.\nCOMPLETED: wrote x/a.txt","type":"result","duration_ms":168}`,
  maxTurns: String.raw`{"type":"system","subtype":"init","cwd":"/tmp/tmp.uqq2BRJvLU","session_id":"f423e6aa-dbd3-490f-bb56-7548c1ed77df","model":"claude-haiku-5-5","permissionMode":"acceptEdits","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.330"}
{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-5-5","content":[{"type":"text","text":"I will write the file."}],"stop_reason":null,"usage":{"input_tokens":1000,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"parent_tool_use_id":null,"session_id":"f423e6aa-dbd3-490f-bb56-7548c1ed77df"}
{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-5-5","content":[{"type":"tool_use","id":"toolu_1","name":"Write","input":{"file_path":"/tmp/rec/x/a.txt","content":"hello\n"}}],"stop_reason":null,"usage":{"input_tokens":1000,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"parent_tool_use_id":null,"session_id":"f423e6aa-dbd3-490f-bb56-7548c1ed77df"}
{"type":"system","subtype":"permission_denied","tool_name":"Write","tool_use_id":"toolu_1","decision_reason_type":"workingDir","decision_reason":"Path is outside allowed working directories","message":"Claude requested permissions to write to /tmp/rec/x/a.txt, but you haven't granted it yet.","session_id":"f423e6aa-dbd3-490f-bb56-7548c1ed77df"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"Claude requested permissions to write to /tmp/rec/x/a.txt, but you haven't granted it yet.","is_error":true,"tool_use_id":"toolu_1"}]},"parent_tool_use_id":null,"session_id":"f423e6aa-dbd3-490f-bb56-7548c1ed77df"}
{"duration_api_ms":27,"stop_reason":"tool_use","session_id":"f423e6aa-dbd3-490f-bb56-7548c1ed77df","total_cost_usd":0.000125,"usage":{"input_tokens":1000,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":50},"permission_denials":[{"tool_name":"Write","tool_use_id":"toolu_1","tool_input":{"file_path":"/tmp/rec/x/a.txt","content":"hello\n"}}],"terminal_reason":"max_turns","is_error":true,"num_turns":2,"subtype":"error_max_turns","errors":["Reached maximum number of turns (1)"],"type":"result","duration_ms":124}`,
  maxBudget: String.raw`{"type":"system","subtype":"init","cwd":"/tmp/tmp.DlZRjylpDa","session_id":"f0af4761-c669-49e4-8a90-2f33dd7339e8","model":"claude-haiku-5-5","permissionMode":"acceptEdits","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.330"}
{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-5-5","content":[{"type":"text","text":"I will write the file."}],"stop_reason":null,"usage":{"input_tokens":1000,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"parent_tool_use_id":null,"session_id":"f0af4761-c669-49e4-8a90-2f33dd7339e8"}
{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-5-5","content":[{"type":"tool_use","id":"toolu_1","name":"Write","input":{"file_path":"/tmp/rec/x/a.txt","content":"hello\n"}}],"stop_reason":null,"usage":{"input_tokens":1000,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"parent_tool_use_id":null,"session_id":"f0af4761-c669-49e4-8a90-2f33dd7339e8"}
{"type":"system","subtype":"permission_denied","tool_name":"Write","tool_use_id":"toolu_1","decision_reason_type":"workingDir","decision_reason":"Path is outside allowed working directories","message":"Claude requested permissions to write to /tmp/rec/x/a.txt, but you haven't granted it yet.","session_id":"f0af4761-c669-49e4-8a90-2f33dd7339e8"}
{"duration_api_ms":0,"stop_reason":"tool_use","session_id":"f0af4761-c669-49e4-8a90-2f33dd7339e8","total_cost_usd":0.000125,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"permission_denials":[{"tool_name":"Write","tool_use_id":"toolu_1","tool_input":{"file_path":"/tmp/rec/x/a.txt","content":"hello\n"}}],"terminal_reason":"budget_exhausted","is_error":true,"num_turns":1,"subtype":"error_max_budget_usd","errors":["Reached maximum budget ($0.0001)"],"type":"result","duration_ms":97}`,
  // The API out of reach (CLAUDE_CODE_MAX_RETRIES=2, or 1; `ANTHROPIC_BASE_URL` at a closed port, a server that resets,
  // a name that does not resolve, https to a plain HTTP server, a server that never answers with API_TIMEOUT_MS=3000).
  connectionRefused: `{"type":"system","subtype":"init","cwd":"/tmp/i50","session_id":"8d631c40-e392-412d-a386-a0dd666cce8b","model":"claude-haiku-5-5","permissionMode":"default","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.330"}
{"type":"system","subtype":"api_retry","attempt":1,"max_retries":2,"retry_delay_ms":577,"error_status":null,"error":"unknown","session_id":"8d631c40-e392-412d-a386-a0dd666cce8b"}
{"type":"system","subtype":"api_retry","attempt":2,"max_retries":2,"retry_delay_ms":1106,"error_status":null,"error":"unknown","session_id":"8d631c40-e392-412d-a386-a0dd666cce8b"}
{"type":"assistant","message":{"id":"3f0c0d8a-6656-4041-a0ff-11ce0ba02ecf","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"content":[{"type":"text","text":"API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)"}]},"parent_tool_use_id":null,"session_id":"8d631c40-e392-412d-a386-a0dd666cce8b","error":"server_error","is_api_error_message":true,"api_error":"connection_failed"}
{"duration_api_ms":0,"stop_reason":"stop_sequence","session_id":"8d631c40-e392-412d-a386-a0dd666cce8b","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"permission_denials":[],"terminal_reason":"api_error","is_error":true,"num_turns":1,"subtype":"success","api_error_status":null,"api_error":"connection_failed","result":"API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)","type":"result","duration_ms":2691}`,
  connectionReset: `{"type":"system","subtype":"init","cwd":"/tmp/i50","session_id":"18fa24e6-079b-4c63-8072-cbe0442ae257","model":"claude-haiku-5-5","permissionMode":"default","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.330"}
{"type":"system","subtype":"api_retry","attempt":1,"max_retries":2,"retry_delay_ms":575,"error_status":null,"error":"unknown","session_id":"18fa24e6-079b-4c63-8072-cbe0442ae257"}
{"type":"system","subtype":"api_retry","attempt":2,"max_retries":2,"retry_delay_ms":1235,"error_status":null,"error":"unknown","session_id":"18fa24e6-079b-4c63-8072-cbe0442ae257"}
{"type":"assistant","message":{"id":"e98c75ff-4d42-4229-8f02-cb628eed12f8","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"content":[{"type":"text","text":"API Error: Connection dropped (ECONNRESET). Check the gateway set in ANTHROPIC_BASE_URL, then try again."}]},"parent_tool_use_id":null,"session_id":"18fa24e6-079b-4c63-8072-cbe0442ae257","error":"server_error","is_api_error_message":true,"api_error":"connection_failed"}
{"duration_api_ms":0,"stop_reason":"stop_sequence","session_id":"18fa24e6-079b-4c63-8072-cbe0442ae257","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"permission_denials":[],"terminal_reason":"api_error","is_error":true,"num_turns":1,"subtype":"success","api_error_status":null,"api_error":"connection_failed","result":"API Error: Connection dropped (ECONNRESET). Check the gateway set in ANTHROPIC_BASE_URL, then try again.","type":"result","duration_ms":2799}`,
  nameNotResolved: `{"type":"system","subtype":"init","cwd":"/tmp/i50","session_id":"85b85341-ba18-4ef8-ba4c-93cf490a7cac","model":"claude-haiku-5-5","permissionMode":"default","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.330"}
{"type":"system","subtype":"api_retry","attempt":1,"max_retries":2,"retry_delay_ms":529,"error_status":null,"error":"unknown","session_id":"85b85341-ba18-4ef8-ba4c-93cf490a7cac"}
{"type":"system","subtype":"api_retry","attempt":2,"max_retries":2,"retry_delay_ms":1215,"error_status":null,"error":"unknown","session_id":"85b85341-ba18-4ef8-ba4c-93cf490a7cac"}
{"type":"assistant","message":{"id":"8dab2f84-e359-47d9-ba6b-f0ce26a294a2","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"content":[{"type":"text","text":"API Error: Can't reach the API server — check your internet or DNS (ENOTFOUND)"}]},"parent_tool_use_id":null,"session_id":"85b85341-ba18-4ef8-ba4c-93cf490a7cac","error":"server_error","is_api_error_message":true,"api_error":"connection_failed"}
{"duration_api_ms":0,"stop_reason":"stop_sequence","session_id":"85b85341-ba18-4ef8-ba4c-93cf490a7cac","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"permission_denials":[],"terminal_reason":"api_error","is_error":true,"num_turns":1,"subtype":"success","api_error_status":null,"api_error":"connection_failed","result":"API Error: Can't reach the API server — check your internet or DNS (ENOTFOUND)","type":"result","duration_ms":2828}`,
  tlsFailed: `{"type":"system","subtype":"init","cwd":"/tmp/i50","session_id":"916ddb05-b894-44da-a8be-b710697e470f","model":"claude-haiku-5-5","permissionMode":"default","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.330"}
{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":595,"error_status":null,"error":"unknown","session_id":"916ddb05-b894-44da-a8be-b710697e470f"}
{"type":"assistant","message":{"id":"2b6ee291-ce01-42f2-99f5-d21e9c2578b3","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"content":[{"type":"text","text":"API Error: Unable to connect to API (EPROTO)"}]},"parent_tool_use_id":null,"session_id":"916ddb05-b894-44da-a8be-b710697e470f","error":"server_error","is_api_error_message":true}
{"duration_api_ms":0,"stop_reason":"stop_sequence","session_id":"916ddb05-b894-44da-a8be-b710697e470f","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"permission_denials":[],"terminal_reason":"api_error","is_error":true,"num_turns":1,"subtype":"success","api_error_status":null,"result":"API Error: Unable to connect to API (EPROTO)","type":"result","duration_ms":781}`,
  timedOut: `{"type":"system","subtype":"init","cwd":"/tmp/i50","session_id":"25aa4547-6346-4c4a-8104-e6c5fad15184","model":"claude-haiku-5-5","permissionMode":"default","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.330"}
{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":518,"error_status":null,"error":"unknown","session_id":"25aa4547-6346-4c4a-8104-e6c5fad15184"}
{"type":"assistant","message":{"id":"f837c041-5c16-4c01-bac7-ce93744b694b","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"content":[{"type":"text","text":"Request timed out. If the API is slow to answer, or a proxy or gateway holds responses, set API_TIMEOUT_MS above 3000."}]},"parent_tool_use_id":null,"session_id":"25aa4547-6346-4c4a-8104-e6c5fad15184","error":"server_error","is_api_error_message":true}
{"duration_api_ms":0,"stop_reason":"stop_sequence","session_id":"25aa4547-6346-4c4a-8104-e6c5fad15184","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"permission_denials":[],"terminal_reason":"api_error","is_error":true,"num_turns":1,"subtype":"success","api_error_status":null,"result":"Request timed out. If the API is slow to answer, or a proxy or gateway holds responses, set API_TIMEOUT_MS above 3000.","type":"result","duration_ms":6856}`,
};

const EXIT: ExitInfo = { exitCode: 1, timedOut: false, aborted: false, stderrTail: '' };

function feed(text: string, p = new StreamJsonParser()): StreamJsonParser {
  for (const line of text.split('\n')) p.accept(line);
  return p;
}
const sample = (name: string): string => {
  const s = REAL[name];
  if (s === undefined) throw new Error(`no sample ${name}`);
  return s;
};
const failureOf = (p: StreamJsonParser, exit: Partial<ExitInfo> = {}) => {
  const o = p.classify({ ...EXIT, ...exit }).outcome;
  if (o.kind !== 'failed') throw new Error(`expected a failure, got ${JSON.stringify(o)}`);
  return o.failure;
};

describe('parseStatusLine', () => {
  it('takes the last status line, trimmed', () => {
    expect(parseStatusLine('COMPLETED: first\nmore\n  FAILED: tests red  \nbye')).toEqual({ status: 'FAILED', text: 'tests red' });
    expect(parseStatusLine('Done.\nBLOCKED: needs an API key')).toEqual({ status: 'BLOCKED', text: 'needs an API key' });
    expect(parseStatusLine('line\r\nCOMPLETED: crlf\r\n')).toEqual({ status: 'COMPLETED', text: 'crlf' });
    expect(parseStatusLine('COMPLETED:')).toEqual({ status: 'COMPLETED', text: '' });
  });
  it('returns null when there is none', () => {
    expect(parseStatusLine('all good')).toBeNull();
    expect(parseStatusLine('I have COMPLETED: the task')).toBeNull();
    expect(parseStatusLine('completed: lower case')).toBeNull();
    expect(parseStatusLine('')).toBeNull();
  });
});

describe('LineSplitter', () => {
  const collect = (chunks: (string | Buffer)[], max?: number) => {
    const lines: [string, boolean][] = [];
    const s = new LineSplitter((l, t) => lines.push([l, t]), max);
    for (const c of chunks) s.push(c);
    s.end();
    return lines;
  };
  it('joins lines split across chunks and flushes the last partial line', () => {
    expect(collect(['ab', 'c\nde', 'f\n\ng'])).toEqual([
      ['abc', false],
      ['def', false],
      ['', false],
      ['g', false],
    ]);
  });
  it('decodes multi-byte characters split across chunks, strips CR', () => {
    const bytes = Buffer.from('héllo · wörld\r\n');
    expect(collect([bytes.subarray(0, 2), bytes.subarray(2, 9), bytes.subarray(9)])).toEqual([['héllo · wörld', false]]);
  });
  it('cuts over-long lines and keeps going', () => {
    const lines = collect(['x'.repeat(50), 'y'.repeat(50), '\nshort\n'], 64);
    expect(lines).toEqual([
      ['x'.repeat(50) + 'y'.repeat(14), true],
      ['short', false],
    ]);
  });
  it('gives the same lines for any chunking (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 20 }), { maxLength: 20 }), fc.array(fc.nat(), { maxLength: 10 }), (parts, cuts) => {
        const text = parts.join('\n');
        const buf = Buffer.from(text);
        const points = [...new Set(cuts.map((c) => c % (buf.length + 1)))].sort((a, b) => a - b);
        const chunks: Buffer[] = [];
        let prev = 0;
        for (const p of [...points, buf.length]) {
          chunks.push(buf.subarray(prev, p));
          prev = p;
        }
        const got = collect(chunks).map(([l]) => l);
        const want = text === '' ? [] : text.split('\n');
        if (text.endsWith('\n')) want.pop();
        expect(got).toEqual(want.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l)));
      }),
    );
  });
});

describe('classify recorded samples from the real CLI', () => {
  it('not logged in → not-authenticated, flagged as soon as the assistant error appears', () => {
    const p = new StreamJsonParser();
    const [init, assistant, result] = sample('notLoggedIn').split('\n');
    p.accept(init!);
    expect(p.authFailureSeen()).toBe(false);
    p.accept(assistant!);
    expect(p.authFailureSeen()).toBe(true);
    p.accept(result!);
    expect(p.sessionId).toBe('b91a121b-e295-43d3-bfc7-5632f5601f03');
    expect(failureOf(p)).toEqual({ reason: 'not-authenticated', message: 'Not logged in · Please run /login' });
  });
  it('401 → not-authenticated, flagged at the first api_retry', () => {
    const p = new StreamJsonParser();
    const lines = sample('status401').split('\n');
    p.accept(lines[0]!);
    p.accept(lines[1]!);
    expect(p.lastApiRetry).toEqual({ attempt: 1, maxRetries: 1, retryDelayMs: 523, errorStatus: 401, error: 'authentication_failed' });
    expect(p.authFailureSeen()).toBe(true);
    for (const l of lines.slice(2)) p.accept(l);
    expect(failureOf(p).reason).toBe('not-authenticated');
    // Killed right after the api_retry, before any result:
    const early = feed(lines.slice(0, 2).join('\n'));
    expect(failureOf(early, { exitCode: undefined, signal: 'SIGTERM' }).reason).toBe('not-authenticated');
  });
  it('429 → rate-limited with the retry delay', () => {
    const f = failureOf(feed(sample('status429')));
    expect(f).toMatchObject({ reason: 'rate-limited', retryAfterMs: 2216 });
    expect(feed(sample('status429')).authFailureSeen()).toBe(false);
    const early = feed(sample('status429').split('\n').slice(0, 2).join('\n'));
    expect(failureOf(early, { signal: 'SIGTERM' }).reason).toBe('rate-limited');
  });
  it('529 → overloaded', () => {
    expect(failureOf(feed(sample('status529'))).reason).toBe('overloaded');
    const early = feed(sample('status529').split('\n').slice(0, 2).join('\n'));
    expect(failureOf(early, { signal: 'SIGTERM' }).reason).toBe('overloaded');
  });
  it('the API out of reach (refused, reset, a name that does not resolve, TLS, a timeout) → api-unreachable in the CLI’s words; its api_retry with no status is a refusal of its own', () => {
    const words: Record<string, string> = {
      connectionRefused: 'API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)',
      connectionReset: 'API Error: Connection dropped (ECONNRESET). Check the gateway set in ANTHROPIC_BASE_URL, then try again.',
      nameNotResolved: "API Error: Can't reach the API server — check your internet or DNS (ENOTFOUND)",
      tlsFailed: 'API Error: Unable to connect to API (EPROTO)',
      timedOut: 'Request timed out. If the API is slow to answer, or a proxy or gateway holds responses, set API_TIMEOUT_MS above 3000.',
    };
    for (const [name, said] of Object.entries(words)) {
      const lines = sample(name).split('\n');
      expect(failureOf(feed(sample(name))), name).toEqual({ reason: 'api-unreachable', message: said });
      // Each try the CLI makes again is one refusal, told as it comes; none is an authentication failure.
      const p = feed(lines.slice(0, 2).join('\n'));
      expect([p.refusals, p.authFailureSeen()], name).toEqual([1, false]);
      expect(p.lastApiRetry, name).toMatchObject({ attempt: 1, error: 'unknown' });
      expect(p.lastApiRetry?.errorStatus, name).toBeUndefined();
      // Stopped by the run at its first api_retry, before the CLI said more: still the API out of reach.
      expect(failureOf(p, { signal: 'SIGTERM', stoppedForLimit: true }), name).toMatchObject({ reason: 'api-unreachable' });
      expect(failureOf(p, { signal: 'SIGTERM' }).reason, name).toBe('api-unreachable');
    }
    // A connection failure the CLI got past (a response served after it) is no outcome of its own.
    const recovered = feed([sample('connectionRefused').split('\n')[1]!, sample('success').split('\n')[1]!].join('\n'));
    expect(failureOf(recovered, { exitCode: 1 }).reason).toBe('no-result');
  });
  it('500 and 400 → api-error with the status', () => {
    expect(failureOf(feed(sample('status500')))).toMatchObject({ reason: 'api-error', status: 500 });
    const f = failureOf(feed(sample('status400')));
    expect(f).toEqual({ reason: 'api-error', status: 400, message: 'API Error: 400 bad request thing' });
  });
  it('success → reported with the status line, usage and session', () => {
    const p = feed(sample('success'));
    const c = p.classify({ ...EXIT, exitCode: 0 });
    expect(c.outcome).toEqual({
      kind: 'reported',
      resultText: 'Wrote it.\nCOMPLETED: wrote x/a.txt',
      statusLine: { status: 'COMPLETED', text: 'wrote x/a.txt' },
    });
    expect(c.usage).toEqual({ costUsd: 0.00023500000000000002, inputTokens: 2000, outputTokens: 70, cacheReadTokens: 0, cacheCreationTokens: 0 });
    expect(c.sessionId).toBe('74477569-f2fc-475a-99f5-f375e1edbcbf');
    expect(c.permissionDenials).toEqual([]);
    expect(p.result).toMatchObject({ numTurns: 2, durationMs: 163, terminalReason: 'completed' });
  });
  it('a denied tool → reported, denials carried through', () => {
    const c = feed(sample('denied')).classify({ ...EXIT, exitCode: 0 });
    expect(c.outcome.kind).toBe('reported');
    expect(c.permissionDenials).toEqual([{ tool: 'Write', input: { file_path: '/tmp/rec/x/a.txt', content: 'hello\n' } }]);
  });
  it('turn and budget limits', () => {
    expect(failureOf(feed(sample('maxTurns')))).toEqual({ reason: 'max-turns', message: 'Reached maximum number of turns (1)' });
    expect(failureOf(feed(sample('maxBudget')))).toEqual({ reason: 'max-budget', message: 'Reached maximum budget ($0.0001)' });
    // The denials of a failed run are still reported.
    expect(feed(sample('maxBudget')).permissionDenials()).toHaveLength(1);
  });
});

describe('classify without a usable result', () => {
  const init = sample('success').split('\n')[0]!;
  it('spawn errors → agent-missing', () => {
    const p = new StreamJsonParser();
    for (const code of ['ENOENT', 'EACCES']) {
      expect(failureOf(p, { spawnError: { code, message: `spawn x ${code}` }, bin: '/no/claude' })).toEqual({
        reason: 'agent-missing',
        bin: '/no/claude',
        message: `spawn x ${code}`,
      });
    }
    expect(failureOf(p, { spawnError: { code: 'E2BIG', message: 'too big' } }).reason).toBe('no-result');
  });
  it('aborted → interrupted, even with a result', () => {
    expect(failureOf(feed(sample('success')), { aborted: true, signal: 'SIGTERM' })).toEqual({ reason: 'interrupted' });
  });
  it('timed out → timed-out unless the result already arrived', () => {
    expect(failureOf(feed(init), { timedOut: true, signal: 'SIGTERM', timeoutMs: 5000 })).toEqual({ reason: 'timed-out', timeoutMs: 5000 });
    expect(feed(sample('success')).classify({ ...EXIT, timedOut: true }).outcome.kind).toBe('reported');
  });
  it('garbage → garbage-output with a sample', () => {
    const p = feed('Error: boom\n   at x.js:1\n\n{not json');
    expect(p.nonJsonLines).toBe(3);
    expect(failureOf(p)).toEqual({ reason: 'garbage-output', sample: 'Error: boom' });
    // JSON that is not an event counts as garbage too.
    expect(failureOf(feed('[1,2]\n"x"\n42')).reason).toBe('garbage-output');
  });
  it('a crash after valid events → no-result with exit code and stderr', () => {
    const p = feed(`${init}\nUnhandled rejection`);
    expect(failureOf(p, { exitCode: 1, stderrTail: 'TypeError: x' })).toEqual({ reason: 'no-result', exitCode: 1, stderrTail: 'TypeError: x' });
    expect(failureOf(feed(''), { exitCode: undefined, signal: 'SIGKILL' })).toEqual({ reason: 'no-result', signal: 'SIGKILL', stderrTail: '' });
  });
  it('a reported result wins over a non-zero exit code', () => {
    expect(feed(sample('success')).classify({ ...EXIT, exitCode: 3 }).outcome.kind).toBe('reported');
  });
});

describe('running state', () => {
  it('tracks activity: tool uses with short inputs, else the last text', () => {
    const p = new StreamJsonParser({ cwd: '/w' });
    const tool = (name: string, input: unknown) =>
      JSON.stringify({ type: 'assistant', message: { id: 'm', content: [{ type: 'tool_use', id: 't', name, input }] } });
    p.accept(tool('Write', { file_path: '/w/src/a.ts', content: 'x' }));
    expect(p.activity).toBe('Write src/a.ts');
    p.accept(tool('Bash', { command: 'npm test', description: 'run tests' }));
    expect(p.activity).toBe('Bash npm test');
    p.accept(JSON.stringify({ type: 'assistant', message: { id: 'm2', content: [{ type: 'text', text: 'long '.repeat(100) }] } }));
    expect(p.activity!.length).toBeLessThanOrEqual(200);
    expect(p.activity!.startsWith('long long')).toBe(true);
  });
  it('counts each assistant message once in running usage; the result replaces it', () => {
    const p = new StreamJsonParser();
    const msg = (id: string, out: number) =>
      JSON.stringify({ type: 'assistant', message: { id, content: [], usage: { input_tokens: 100, output_tokens: out } } });
    p.accept(msg('a', 1));
    p.accept(msg('a', 1));
    p.accept(msg('b', 7));
    expect(p.usage()).toMatchObject({ inputTokens: 200, outputTokens: 8, costUsd: 0 });
    feed(sample('success').split('\n').at(-1)!, p);
    expect(p.usage()).toMatchObject({ inputTokens: 2000, outputTokens: 70, costUsd: 0.00023500000000000002 });
    expect(p.costUsd).toBeCloseTo(0.000235);
  });
  it('keeps streamed permission denials when no result arrives, bounded', () => {
    const p = new StreamJsonParser();
    const line = JSON.stringify({ type: 'system', subtype: 'permission_denied', tool_name: 'Bash', message: 'nope' });
    for (let i = 0; i < 500; i++) p.accept(line);
    expect(p.permissionDenials()).toHaveLength(100);
    expect(p.permissionDenials()[0]).toEqual({ tool: 'Bash', input: { message: 'nope' } });
  });
  it('summarizes tool inputs', () => {
    expect(summarizeToolInput('Grep', { pattern: 'foo', path: '/w/src' }, '/w')).toBe('foo in src');
    expect(summarizeToolInput('WebFetch', { url: 'https://x.dev' })).toBe('https://x.dev');
    expect(summarizeToolInput('Bash', { command: 'a\n  b' })).toBe('a b');
  });
});

describe('formatEventForLog', () => {
  const events = sample('success')
    .split('\n')
    .map((l) => JSON.parse(l) as unknown);
  const log = events.flatMap((e) => formatEventForLog(e, { cwd: '/tmp/tmp.B0E8oVwimC' }));
  it('writes the session with a resume hint, text, tool uses and results', () => {
    expect(log[0]).toBe('session 74477569-f2fc-475a-99f5-f375e1edbcbf (resume with: claude --resume 74477569-f2fc-475a-99f5-f375e1edbcbf)');
    expect(log).toContain('assistant: I will write the file.');
    expect(log).toContain('→ Write x/a.txt');
    expect(log.some((l) => l.startsWith('  ← File created successfully'))).toBe(true);
    const result = log.find((l) => l.startsWith('= result: success'))!;
    expect(result).toContain('cost $0.0002');
    expect(result).toContain('tokens in 2000 out 70');
    expect(result).toContain('turns 2');
    expect(result).toContain('0.2s');
    expect(log).toContain('  COMPLETED: wrote x/a.txt');
  });
  it('notes api retries, API errors and permission denials', () => {
    const l401 = sample('status401')
      .split('\n')
      .flatMap((l) => formatEventForLog(JSON.parse(l)));
    expect(l401).toContain('! API retry 1/1: status 401 authentication_failed, next try in 523 ms');
    expect(l401).toContain('! API error: authentication_failed (status 401)');
    const denied = sample('denied')
      .split('\n')
      .flatMap((l) => formatEventForLog(JSON.parse(l)));
    expect(denied.some((l) => l.startsWith('! permission denied: Write'))).toBe(true);
    expect(denied).toContain('  permission denials (1):');
    expect(denied).toContain('    Write /tmp/rec/x/a.txt');
  });
  it('cuts long tool results to 20 lines', () => {
    const lines = Array.from({ length: 50 }, (_, i) => `line ${i}`).join('\n');
    const out = formatEventForLog({ type: 'user', message: { content: [{ type: 'tool_result', content: lines }] } });
    expect(out).toHaveLength(21);
    expect(out[0]).toBe('  ← line 0');
    expect(out[20]).toBe('    … [30 more lines]');
    expect(
      formatEventForLog({ type: 'user', message: { content: [{ type: 'tool_result', is_error: true, content: [{ type: 'text', text: 'bad' }] }] } }),
    ).toEqual(['  ✗ bad']);
  });
});
