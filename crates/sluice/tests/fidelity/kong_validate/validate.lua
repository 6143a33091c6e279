-- validate.lua: checks declarative config files with Kong's own validation code, the way a DB-less Kong
-- node reads its `declarative_config` or a `POST /config` body: Kong's `kong.db.declarative` parses the
-- text (JSON, else YAML), migrates 1.1/2.1 route paths, and `declarative_config` (the whole-document
-- schema built from every entity schema and every bundled plugin's schema) validates and flattens it,
-- foreign keys and uniqueness included. Only OpenResty is stood in for (openresty.lua).
-- Usage: luajit validate.lua [--verbose] <Kong checkout> <file>...
-- Prints `<file>: ok`, or every error Kong gives, one per line with its path; exits 1 when any file has one.
local here = arg[0]:match("^(.*)/[^/]*$") or "."
local args, verbose = {}, false
for _, a in ipairs(arg) do
  if a == "--verbose" then verbose = true else args[#args + 1] = a end
end
local root = args[1]
if not root or #args < 2 then
  io.stderr:write("usage: luajit validate.lua [--verbose] <Kong checkout> <file>...\n")
  os.exit(2)
end

package.path = here .. "/?.lua;" .. root .. "/?.lua;" .. root .. "/?/init.lua;" .. package.path
local openresty = require("openresty")
openresty.verbose = verbose
_G.ngx = openresty.ngx
-- `kong` as a DB-less node's schemas see it: the configuration with kong.conf.default's values for what
-- they read, and `kong.log` (older tags log deprecations through it), written to stderr with --verbose.
local function log(...)
  if verbose then io.stderr:write("[kong.log] ", table.concat({ ... }, " "), "\n") end
end
local kong_log = setmetatable({}, { __call = function(_, ...) log(...) end,
  __index = function() return setmetatable({ write = function(...) log(...) end }, { __call = function(_, ...) log(...) end }) end })
_G.kong = {
  configuration = { database = "off", router_flavor = "traditional_compatible", untrusted_lua = "sandbox",
    untrusted_lua_sandbox_requires = {}, untrusted_lua_sandbox_environment = {} },
  log = kong_log,
}
table.unpack = table.unpack or unpack

-- Kong's modules come from the checkout; OpenResty's from openresty.lua. A module neither has is an error,
-- unless it only serves the runtime (openresty.inert_prefixes).
local real_require = require
function require(name)
  local v = package.loaded[name]
  if v ~= nil then return v end
  if openresty.modules[name] ~= nil then
    package.loaded[name] = openresty.modules[name]
    return openresty.modules[name]
  end
  for _, prefix in ipairs(openresty.inert_prefixes) do
    if name:match(prefix) then
      package.loaded[name] = openresty.inert(name)
      return package.loaded[name]
    end
  end
  return real_require(name)
end

local constants = require("kong.constants")
local declarative = require("kong.db.declarative")

-- The plugins of a default node (`plugins = bundled`) and its bundled vaults.
local loaded_plugins, loaded_vaults = {}, {}
for name in pairs(constants.BUNDLED_PLUGINS) do loaded_plugins[name] = true end
for name in pairs(constants.BUNDLED_VAULTS or {}) do loaded_vaults[name] = true end
local dc = assert(declarative.new_config({ loaded_plugins = loaded_plugins, loaded_vaults = loaded_vaults }))

-- Kong's err_t as lines `path: message`, sorted, so that every error shows and two runs compare.
local function flatten_errors(t, path, out)
  for k, v in pairs(t) do
    local name = k == ngx.null and "null" or tostring(k)
    local p = path == "" and name or (type(k) == "number" and path .. "[" .. k .. "]" or path .. "." .. name)
    if type(v) == "table" then flatten_errors(v, p, out) else out[#out + 1] = p .. ": " .. tostring(v) end
  end
  return out
end

-- The document as Kong's `parse_string` decodes it (cjson for a .json name, else lyaml, whose nulls
-- become ngx.null), for the explanations below; nil when it is neither.
local cjson_safe = require("cjson.safe")
local lyaml = require("lyaml")
local function decode(text, name)
  local doc = name:match("json$") and cjson_safe.decode(text) or nil
  if type(doc) ~= "table" then
    local ok, y = pcall(lyaml.load, text)
    if not ok or type(y) ~= "table" then return nil end
    local function nulls(t)
      for k, v in pairs(t) do
        if v == lyaml.null then t[k] = ngx.null elseif type(v) == "table" then nulls(v) end
      end
    end
    nulls(y)
    doc = y
  end
  return doc
end

-- When Kong's `parse_string` raises a Lua error (a request would get a 500), what Kong would have said:
-- err_t of the schema's `flatten` when only the error's wording raised (`pretty_print_error` does on some
-- err_t shapes), else each plugin processed alone by Kong's plugin schema (`flatten` raises where a
-- nested record's `process_auto_fields` fails, e.g. on a shorthand's mismatch: `validate_field` in
-- kong/db/schema/init.lua then validates the nil it returned).
local Schema = require("kong.db.schema")
local function explain_crash(text, name)
  local lines = {}
  local doc = decode(text, name)
  if not doc then return lines end
  local ok, entities, err_t = pcall(dc.schema.flatten, dc.schema, doc)
  if ok and not entities and type(err_t) == "table" then return flatten_errors(err_t, "", lines) end
  local plugin_schema = Schema.new(dc.schema.fields.plugins.elements)
  local function walk(t, path)
    for k, v in pairs(t) do
      if type(v) == "table" then
        local p = type(k) == "number" and path .. "[" .. k .. "]" or (path == "" and k or path .. "." .. k)
        if k == "plugins" then
          for i, plugin in ipairs(v) do
            local done, err = plugin_schema:process_auto_fields(plugin, "insert")
            if not done then
              flatten_errors(type(err) == "table" and err or { err }, p .. "[" .. i .. "].config", lines)
            end
          end
        else
          walk(v, p)
        end
      end
    end
  end
  walk(decode(text, name), "")
  return lines
end

local failed = false
for i = 2, #args do
  local file = args[i]
  local f = io.open(file, "rb")
  if not f then
    print(file .. ": cannot read")
    failed = true
  else
    local text = f:read("*a")
    f:close()
    -- The name decides the parser as Kong's `parse_file` does (json, else yaml/yml).
    local name = file:match("%.json$") and file or (file:gsub("%.[^.]*$", "") .. ".yaml")
    -- Kong's own entry point: decoding, the 1.1/2.1 route path migration, `flatten` (validation with
    -- every entity and plugin schema, ids, references, uniqueness), as each tag has them.
    local ok, entities, err, err_t = xpcall(dc.parse_string, debug.traceback, dc, text, name)
    if not ok then
      failed = true
      local lines = explain_crash(text, name)
      table.sort(lines)
      if #lines > 0 then
        print(file .. ": " .. #lines .. " error(s) (Kong raises a Lua error on this document: " ..
          tostring(entities):match("^[^\n]*") .. ")")
        for _, l in ipairs(lines) do print("  " .. l) end
      else
        print(file .. ": Kong's validation raised a Lua error: " .. tostring(entities))
      end
    elseif not entities then
      failed = true
      local lines = type(err_t) == "table" and flatten_errors(err_t, "", {}) or { tostring(err) }
      table.sort(lines)
      print(file .. ": " .. #lines .. " error(s)")
      for _, l in ipairs(lines) do print("  " .. l) end
    else
      local counts = {}
      for kind, list in pairs(entities) do
        local n = 0
        for _ in pairs(list) do n = n + 1 end
        if n > 0 then counts[#counts + 1] = kind .. "=" .. n end
      end
      table.sort(counts)
      print(file .. ": ok (" .. table.concat(counts, " ") .. ")")
    end
  end
end
if verbose then
  io.stderr:write("inert modules: " .. table.concat(openresty.stand_ins(), ", ") .. "\n")
end
os.exit(failed and 1 or 0)
