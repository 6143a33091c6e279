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
-- `kong` as a DB-less node sees it at init: its configuration only, with the defaults of kong.conf.
_G.kong = { configuration = { database = "off", router_flavor = "traditional_compatible" } }
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

-- Kong's `parse_string` (kong/db/declarative/init.lua) step by step: `unserialize` (cjson, else lyaml
-- with its nulls made ngx.null), the on-the-fly migration of 1.1/2.1 route paths, and the schema's
-- `flatten` (validation with every entity and plugin schema, ids, references, uniqueness). Its
-- `parse_table` would also word err_t with `pretty_print_error`, which itself raises a Lua error on some
-- err_t shapes: err_t is what is printed here.
local migrate_route_paths = require("kong.db.declarative.migrations.route_path")
local function parse(text, name)
  local doc, err, err_t = dc:unserialize(text, name)
  if not doc then return nil, err, err_t end
  migrate_route_paths(doc)
  local entities, flat_err_t = dc.schema:flatten(doc)
  if not entities then return nil, "declarative config is invalid", flat_err_t end
  return entities
end

-- Kong's err_t as lines `path: message`, sorted, so that every error shows and two runs compare.
local function flatten_errors(t, path, out)
  for k, v in pairs(t) do
    local name = k == ngx.null and "null" or tostring(k)
    local p = path == "" and name or (type(k) == "number" and path .. "[" .. k .. "]" or path .. "." .. name)
    if type(v) == "table" then flatten_errors(v, p, out) else out[#out + 1] = p .. ": " .. tostring(v) end
  end
  return out
end

-- When `flatten` raises a Lua error (Kong's does too, where a nested record's `process_auto_fields`
-- fails: `validate_field` in kong/db/schema/init.lua validates the nil it returns), each plugin of the
-- document is processed alone by Kong's plugin schema, which gives Kong's own message for it.
local Schema = require("kong.db.schema")
local function explain_crash(text, name)
  local plugin_schema = Schema.new(dc.schema.fields.plugins.elements)
  local lines = {}
  local function walk(t, path)
    for k, v in pairs(t) do
      if type(v) == "table" then
        local p = type(k) == "number" and path .. "[" .. k .. "]" or (path == "" and k or path .. "." .. k)
        if k == "plugins" then
          for i, plugin in ipairs(v) do
            local ok, err = plugin_schema:process_auto_fields(plugin, "insert")
            if not ok then flatten_errors(type(err) == "table" and err or { err }, p .. "[" .. i .. "].config", lines) end
          end
        else
          walk(v, p)
        end
      end
    end
  end
  local doc = dc:unserialize(text, name)
  if doc then walk(doc, "") end
  table.sort(lines)
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
    local ok, entities, err, err_t = xpcall(parse, debug.traceback, text, name)
    if not ok then
      failed = true
      local lines = explain_crash(text, name)
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
