-- kong_schema_reader.lua: how kong-3.9-{plugin,entity}-schemas.txt were read from Kong's source (not run by
-- the tests).
-- Loads kong/plugins/<name>/schema.lua of a Kong checkout with stand-ins for the modules that need
-- OpenResty, and prints each config field's type, required, default, one_of and between, then its other
-- validations (lengths, gt, patterns with a violating probe, custom validators by name, err), one line
-- per field, then the shorthand fields and the entity checks; given a module name
-- (`kong.db.schema.entities.routes`), an entity's fields and checks. Both tables' headers describe the
-- format. Usage: luajit kong_schema_reader.lua <directory holding kong/> <plugin or module>...
-- The tables were then written with oauth2's codes and tokens left out and session's random secret
-- default removed.
local root = arg[1]
function is_array_fn(t) local n = 0 for _ in pairs(t) do n = n + 1 end return n == #t end
local NULL = setmetatable({}, { __tostring = function() return "null" end })
-- A stand-in for an OpenResty module: any field or call gives itself back, and marks `touched`, so
-- that a custom validator's answer that went through a stand-in is not taken for Kong's.
local touched = false
local function magic()
  local m
  m = setmetatable({}, {
    __index = function() touched = true return m end,
    __call = function() touched = true return m end,
  })
  return m
end
_G.ngx = { null = NULL, re = magic(), log = function() end, ERR = 4, WARN = 5, DEBUG = 8, INFO = 7, NOTICE = 6, CRIT = 3, ALERT = 2, EMERG = 1, STDERR = 0,
  config = magic(), shared = magic(), worker = magic(), var = magic(), ctx = {}, md5 = function() return "" end,
  now = function() return 0 end, time = function() return 0 end, localtime = function() return "" end,
  get_phase = function() return "init" end, sleep = function() end, timer = magic(), thread = magic(),
  encode_base64 = function() return "" end, decode_base64 = function() return "" end, hmac_sha1 = magic(), sha1_bin = magic() }
_G.kong = magic()
table.unpack = unpack
package.preload["table.isarray"] = function() return function(t) return is_array_fn(t) end end
package.preload["table.clone"] = function() return function(t) local c = {} for k, v in pairs(t) do c[k] = v end return c end end
package.preload["table.new"] = function() return function() return {} end end
package.preload["table.nkeys"] = function() return function(t) local n = 0 for _ in pairs(t) do n = n + 1 end return n end end
local function define(t)
  return setmetatable(t, { __call = function(self, over)
    local c = {}
    for k, v in pairs(self) do c[k] = v end
    for k, v in pairs(over or {}) do c[k] = v end
    return define(c)
  end })
end
local stubs = {
  ["kong.db.schema"] = { define = define, validators = magic() },
  ["socket.url"] = magic(), ["lfs"] = magic(), ["cjson"] = magic(), ["cjson.safe"] = magic(),
  ["pl.template"] = magic(), ["kong.tools.rand"] = magic(), ["kong.tools.sandbox"] = magic(),
}
local loaded = {}
local real_require = require
function require(name)
  if loaded[name] ~= nil then return loaded[name] end
  if stubs[name] then loaded[name] = stubs[name]; return stubs[name] end
  if name:match("^resty") or name:match("^ngx") then loaded[name] = magic(); return loaded[name] end
  local ok, mod = pcall(real_require, name)
  if ok then loaded[name] = mod; return mod end
  local path = root .. "/" .. name:gsub("%.", "/") .. ".lua"
  local f = loadfile(path) or loadfile((path:gsub("%.lua$", "/init.lua")))
  if f then
    local ok2, res = pcall(f, name)
    if ok2 then loaded[name] = res == nil and true or res; return loaded[name] end
    io.stderr:write("stub for ", name, ": ", tostring(res), "\n")
  else
    io.stderr:write("stub for missing ", name, "\n")
  end
  loaded[name] = magic()
  return loaded[name]
end

local function is_array(t)
  if type(t) ~= "table" then return false end
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n == #t
end
local fname
local function json(v, kind)
  if v == NULL then return "null" end
  local t = type(v)
  if t == "string" then return '"' .. v:gsub('\\', '\\\\'):gsub('"', '\\"') .. '"' end
  if t == "number" then
    if v == math.floor(v) and math.abs(v) < 1e15 then return string.format("%d", v) end
    return tostring(v)
  end
  if t == "boolean" then return tostring(v) end
  if t == "table" then
    if next(v) == nil then return (kind == "record" or kind == "map") and "{}" or "[]" end
    if is_array(v) then
      local out = {}
      for _, x in ipairs(v) do out[#out + 1] = json(x) end
      return "[" .. table.concat(out, ",") .. "]"
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys)
    local out = {}
    for _, k in ipairs(keys) do out[#out + 1] = json(k) .. ":" .. json(v[k]) end
    return "{" .. table.concat(out, ",") .. "}"
  end
  if t == "function" then return json(fname(v)) end
  return '"?' .. t .. '"'
end

-- A function's name, read from the line of Kong's source that defines it (`local function validate_host(`,
-- `validate_path = function(`), or `file:line` when that line names none.
local sources = {}
fname = function(fn)
  local info = debug.getinfo(fn, "S")
  local file = info.source:sub(1, 1) == "@" and info.source:sub(2) or "?"
  if not sources[file] then
    sources[file] = {}
    local h = io.open(file)
    if h then for l in h:lines() do sources[file][#sources[file] + 1] = l end h:close() end
  end
  local text = sources[file][info.linedefined] or ""
  local name = text:match("function%s+([%w_.:]+)%s*%(") or text:match("([%w_]+)%s*=%s*function")
  return name or (file:gsub("^.*/kong/", "kong/") .. ":" .. info.linedefined)
end

-- A Lua pattern that Kong matches with `string.match`: a candidate string it rejects, to probe with.
local CANDIDATES = { "", " ", "a b", "//", "/a//b", "x", "*", "..", "a.", "%", "\\", "\n", "~", "/~", "a\0b",
  "?", "/a?", "#", "-", "1", "é", "a/../b", "a/./b", "/a/../b", "/a/./b", "/a b", "/a%", "/a%zz", "[", "Host",
  "Content-Length", "Content-Type" }
-- Whether Kong's checks that run before a pattern's accept a candidate: length and `starts_with`.
local function reaches_patterns(f, c)
  return #c >= (f.len_min or 1) and (not f.starts_with or c:sub(1, #f.starts_with) == f.starts_with)
end

-- Whether every pattern check of the field accepts a candidate (a custom validator runs after them).
local function passes_patterns(f, c)
  if not reaches_patterns(f, c) then return false end
  if f.match and not c:match(f.match) then return false end
  if f.not_match and c:match(f.not_match) then return false end
  for _, one in ipairs(f.match_none or {}) do if c:match(one.pattern) then return false end end
  for _, one in ipairs(f.match_all or {}) do if not c:match(one.pattern) then return false end end
  if f.match_any then
    local any = false
    for _, p in ipairs(f.match_any.patterns) do any = any or c:match(p) ~= nil end
    if not any then return false end
  end
  return true
end

-- Which of the candidates violates a pattern check while the checks Kong runs before it accept it.
local function probe(f, failing)
  for _, c in ipairs(CANDIDATES) do
    if reaches_patterns(f, c) and failing(c) then return c end
  end
end

-- The field validations beyond type/default/one_of/between, as `key=JSON` words. Pattern checks carry a
-- probe (`bad`): a value Lua's own `string.match` shows violating them, found among a few candidates;
-- a custom validator is named after its function, with a probe and Kong's message when the function
-- could run here (it is called on each candidate, OpenResty stand-ins and all).
local function validations(f)
  local out = {}
  local function put(k, v) out[#out + 1] = k .. "=" .. v end
  for _, k in ipairs({ "len_eq", "len_min", "len_max", "gt", "starts_with", "contains" }) do
    if f[k] ~= nil then put(k, json(f[k])) end
  end
  for _, k in ipairs({ "uuid", "timestamp", "is_regex" }) do
    if f[k] then put(k, "true") end
  end
  if f.match then
    put("match", json({ pattern = f.match, bad = probe(f, function(c) return not c:match(f.match) end) }))
  end
  if f.not_match then
    put("not_match", json({ pattern = f.not_match, bad = probe(f, function(c) return c:match(f.not_match) end) }))
  end
  for _, k in ipairs({ "match_none", "match_all" }) do
    if f[k] then
      local list = {}
      for _, one in ipairs(f[k]) do
        local hit = k == "match_none" and function(c) return c:match(one.pattern) end
          or function(c) return not c:match(one.pattern) end
        list[#list + 1] = { pattern = one.pattern, err = one.err, bad = probe(f, hit) }
      end
      put(k, json(list))
    end
  end
  if f.match_any then
    local function none(c)
      for _, p in ipairs(f.match_any.patterns) do if c:match(p) then return false end end
      return true
    end
    put("match_any", json({ patterns = f.match_any.patterns, err = f.match_any.err, bad = probe(f, none) }))
  end
  if f.custom_validator then
    local one = { name = fname(f.custom_validator) }
    for _, c in ipairs(CANDIDATES) do
      local ok, res, err = true, true, nil
      touched = false
      if passes_patterns(f, c) then ok, res, err = pcall(f.custom_validator, c) end
      if touched then break end
      if ok and not res and type(err) == "string" then one.bad, one.err = c, err break end
    end
    put("custom", json(one))
  end
  if f.deprecation then put("deprecated", json(f.deprecation.message or true)) end
  -- A field's own `err` replaces the message of every validator of the field.
  if f.err then put("err", json(f.err)) end
  return out
end

local function line(plugin, path, f)
  local parts = { plugin, path, type(f.type) == "string" and f.type or "?" }
  if f.required then parts[#parts + 1] = "required" end
  if f.default ~= nil then parts[#parts + 1] = "default=" .. json(f.default, f.type) end
  if f.one_of then parts[#parts + 1] = "one_of=" .. json(f.one_of) end
  if f.between then parts[#parts + 1] = "between=" .. json(f.between) end
  for _, w in ipairs(validations(f)) do parts[#parts + 1] = w end
  print(table.concat(parts, " "))
end

-- A schema's `entity_checks`, one line each: `name @N check at=RECORD KIND=JSON`, where RECORD is the
-- dotted path of the record that holds the check (its field names are relative to it; "" is the entity).
local counts = {}
local function checks(name, at, list)
  for _, one in ipairs(list or {}) do
    local kind, arg = next(one)
    counts[name] = (counts[name] or 0) + 1
    print(table.concat({ name, "@" .. counts[name], "check", "at=" .. json(at), kind .. "=" .. json(arg) }, " "))
  end
end

local walk
-- Where a record's entity checks sit, seen from the entity: a plugin's paths are under `config`.
local at_prefix = ""
local function field(plugin, path, f)
  if f.type == "foreign" then return end
  line(plugin, path, f)
  if f.type == "record" then
    walk(plugin, path .. ".", f.fields or {})
    checks(plugin, at_prefix .. path, f.entity_checks)
  end
  if (f.type == "array" or f.type == "set") and f.elements then field(plugin, path .. "[]", f.elements) end
  if f.type == "map" and f.keys and #validations(f.keys) > 0 then line(plugin, path .. "{key}", f.keys) end
  if f.type == "map" and f.values then field(plugin, path .. "{}", f.values) end
end
walk = function(plugin, prefix, fields)
  for _, one in ipairs(fields) do
    local name, f = next(one)
    field(plugin, prefix .. name, f)
  end
end

package.path = root .. "/?.lua;" .. root .. "/?/init.lua;" .. package.path
for i = 2, #arg do
  local name = arg[i]
  if name:match("^kong%.") then
    -- A module of entity schemas (`kong.db.schema.entities.routes`, `kong.plugins.key-auth.daos`): every
    -- field of each entity, foreign keys included.
    local loaded = require(name)
    local list = loaded.fields and { loaded } or loaded
    for key, schema in pairs(list) do
      local short = schema.name or (type(key) == "string" and key) or name:gsub("^.*%.", "")
      for _, one in ipairs(schema.fields) do
        local k, f = next(one)
        if f.type == "foreign" then line(short, k, f) else field(short, k, f) end
      end
      checks(short, "", schema.entity_checks)
    end
  else
    local schema = require("kong.plugins." .. name .. ".schema")
    for _, one in ipairs(schema.fields) do
      local k, f = next(one)
      if k == "config" then
        at_prefix = "config."
        walk(name, "", f.fields)
        checks(name, "config", f.entity_checks)
        for _, sh in ipairs(f.shorthand_fields or {}) do
          local sk, sf = next(sh)
          print(table.concat({ name, sk, sf.type, "shorthand" }, " "))
        end
      end
    end
    checks(name, "", schema.entity_checks)
  end
end
