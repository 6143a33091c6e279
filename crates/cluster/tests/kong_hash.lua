-- Runs Kong's own kong/clustering/config_helper.lua under plain LuaJIT (tests/luajit.rs drives it).
--
-- Usage: luajit kong_hash.lua <path to config_helper.lua> <configs.json>
-- configs.json holds a JSON array of configs; for each one a line is printed:
--   <config> <routes> <services> <plugins> <upstreams> <targets>
-- ("-" for a group hash Kong leaves out). Kong's module is loaded unchanged; only what OpenResty would
-- provide is stubbed here: ngx.null/ngx.md5/ngx.md5_bin (libcrypto through the FFI), the table.*
-- extensions of OpenResty's LuaJIT, tablepool, and the Kong modules config_helper requires but the hash
-- does not use. JSON is decoded with lua-cjson, as Kong's DP does, so null is cjson.null (= ngx.null).

local ffi = require("ffi")
local cjson = require("cjson")

ffi.cdef([[unsigned char *MD5(const unsigned char *d, size_t n, unsigned char *md);]])
local crypto
for _, name in ipairs({ "crypto", "libcrypto.so.3", "libcrypto.so.1.1" }) do
  local ok, lib = pcall(ffi.load, name)
  if ok then
    crypto = lib
    break
  end
end
if not crypto then
  io.stderr:write("libcrypto not found for MD5\n")
  os.exit(77)
end

local function md5_bin(s)
  local out = ffi.new("unsigned char[16]")
  crypto.MD5(s, #s, out)
  return ffi.string(out, 16)
end

local function md5_hex(s)
  return (md5_bin(s):gsub(".", function(c) return string.format("%02x", c:byte()) end))
end

ngx = {
  null = cjson.null,
  md5 = md5_hex,
  md5_bin = md5_bin,
  log = function() end,
  DEBUG = 8,
}

local function count_keys(t)
  local n = 0
  for _ in pairs(t) do
    n = n + 1
  end
  return n
end

package.preload["table.isempty"] = function()
  return function(t) return next(t) == nil end
end
package.preload["table.nkeys"] = function()
  return count_keys
end
package.preload["table.isarray"] = function()
  -- OpenResty: true when the keys are exactly 1..n
  return function(t)
    local n = count_keys(t)
    for k in pairs(t) do
      if type(k) ~= "number" or k < 1 or k > n or k % 1 ~= 0 then
        return false
      end
    end
    return true
  end
end
package.preload["tablepool"] = function()
  return { fetch = function() return {} end, release = function() end }
end
package.preload["kong.tools.yield"] = function()
  return { yield = function() end }
end
package.preload["kong.constants"] = function()
  return { DECLARATIVE_EMPTY_CONFIG_HASH = string.rep("0", 32), CLUSTERING_DATA_PLANE_ERROR = {} }
end
package.preload["kong.db.declarative"] = function() return {} end
package.preload["kong.db.errors"] = function() return {} end

local helper = dofile(arg[1])

local f = assert(io.open(arg[2], "rb"))
local configs = cjson.decode(f:read("*a"))
f:close()

local groups = { "config", "routes", "services", "plugins", "upstreams", "targets" }
for i = 1, #configs do
  local _, hashes = helper.calculate_config_hash(configs[i])
  local line = {}
  for j, g in ipairs(groups) do
    line[j] = hashes[g] or "-"
  end
  io.write(table.concat(line, " "), "\n")
end
