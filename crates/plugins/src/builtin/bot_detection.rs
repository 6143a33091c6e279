//! `bot-detection` (priority 2500): refuses clients by `User-Agent`: the `allow` regexes let a client
//! through first, then `deny` and Kong's list of known bots (from uap-core, as Kong ships it) answer 403.
//! More than one `User-Agent` field is 400, as in Kong; a request without one passes.
//!
//! Each list is compiled once into a `RegexSet`, so a request costs one pass per list whatever its length
//! (Kong runs the regexes one by one behind a per-worker cache).

use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use http::StatusCode;
use regex::RegexSet;
use serde::Deserialize;
use serde_json::Value;
use sluice_model::schema::{Field, Schema};
use std::sync::Arc;

/// Known bots' `User-Agent` patterns (the list Kong ships in `bot-detection/rules.lua`, from uap-core).
const BOTS: &[&str] = &[
    r"(Pingdom.com_bot_version_)(\d+)\.(\d+)",
    r"(facebookexternalhit)/(\d+)\.(\d+)",
    r"Google.*/\+/web/snippet",
    r"(Twitterbot)/(\d+)\.(\d+)",
    r"/((?:Ant-)?Nutch|[A-z]+[Bb]ot|[A-z]+[Ss]pider|Axtaris|fetchurl|Isara|ShopSalad|Tailsweep)[ \-](\d+)(?:\.(\d+)(?:\.(\d+))?)?",
    r"(008|Altresium|Argus|BaiduMobaider|BoardReader|DNSGroup|DataparkSearch|EDI|Goodzer|Grub|INGRID|Infohelfer|LinkedInBot|LOOQ|Nutch|PathDefender|Peew|PostPost|Steeler|Twitterbot|VSE|WebCrunch|WebZIP|Y!J-BR[A-Z]|YahooSeeker|envolk|sproose|wminer)/(\d+)(?:\.(\d+)(?:\.(\d+))?)?",
    r"(MSIE) (\d+)\.(\d+)([a-z]\d?)?;.* MSIECrawler",
    r"(Google-HTTP-Java-Client|Apache-HttpClient|http%20client|Python-urllib|HttpMonitor|TLSProber|WinHTTP|JNLP)(?:[ /](\d+)(?:\.(\d+)(?:\.(\d+))?)?)?",
    r"(1470\.net crawler|50\.nu|8bo Crawler Bot|Aboundex|Accoona-[A-z]+-Agent|AdsBot-Google(?:-[a-z]+)?|altavista|AppEngine-Google|archive.*?\.org_bot|archiver|Ask Jeeves|[Bb]ai[Dd]u[Ss]pider(?:-[A-Za-z]+)*|bingbot|BingPreview|blitzbot|BlogBridge|BoardReader(?: [A-Za-z]+)*|boitho.com-dc|BotSeer|\b\w*favicon\w*\b|\bYeti(?:-[a-z]+)?|Catchpoint bot|[Cc]harlotte|Checklinks|clumboot|Comodo HTTP\(S\) Crawler|Comodo-Webinspector-Crawler|ConveraCrawler|CRAWL-E|CrawlConvera|Daumoa(?:-feedfetcher)?|Feed Seeker Bot|findlinks|Flamingo_SearchEngine|FollowSite Bot|furlbot|Genieo|gigabot|GomezAgent|gonzo1|(?:[a-zA-Z]+-)?Googlebot(?:-[a-zA-Z]+)?|Google SketchUp|grub-client|gsa-crawler|heritrix|HiddenMarket|holmes|HooWWWer|htdig|ia_archiver|ICC-Crawler|Icarus6j|ichiro(?:/mobile)?|IconSurf|IlTrovatore(?:-Setaccio)?|InfuzApp|Innovazion Crawler|InternetArchive|IP2[a-z]+Bot|jbot\b|KaloogaBot|Kraken|Kurzor|larbin|LEIA|LesnikBot|Linguee Bot|LinkAider|LinkedInBot|Lite Bot|Llaut|lycos|Mail\.RU_Bot|masidani_bot|Mediapartners-Google|Microsoft .*? Bot|mogimogi|mozDex|MJ12bot|msnbot(?:-media *)?|msrbot|netresearch|Netvibes|NewsGator[^/]*|^NING|Nutch[^/]*|Nymesis|ObjectsSearch|Orbiter|OOZBOT|PagePeeker|PagesInventory|PaxleFramework|Peeplo Screenshot Bot|PlantyNet_WebRobot|Pompos|Read%20Later|Reaper|RedCarpet|Retreiver|Riddler|Rival IQ|scooter|Scrapy|Scrubby|searchsight|seekbot|semanticdiscovery|Simpy|SimplePie|SEOstats|SimpleRSS|SiteCon|Slurp|snappy|Speedy Spider|Squrl Java|TheUsefulbot|ThumbShotsBot|Thumbshots\.ru|TwitterBot|URL2PNG|Vagabondo|VoilaBot|^vortex|Votay bot|^voyager|WASALive.Bot|Web-sniffer|WebThumb|WeSEE:[A-z]+|WhatWeb|WIRE|WordPress|Wotbox|www\.almaden\.ibm\.com|Xenu(?:.s)? Link Sleuth|Xerka [A-z]+Bot|yacy(?:bot)?|Yahoo[a-z]*Seeker|Yahoo! Slurp|Yandex\w+|YodaoBot(?:-[A-z]+)?|YottaaMonitor|Yowedo|^Zao|^Zao-Crawler|ZeBot_www\.ze\.bz|ZooShot|ZyBorg)(?:[ /]v?(\d+)(?:\.(\d+)(?:\.(\d+))?)?)?",
    r"(?:\/[A-Za-z0-9\.]+)? *([A-Za-z0-9 \-_\!\[\]:]*(?:[Aa]rchiver|[Ii]ndexer|[Ss]craper|[Bb]ot|[Ss]pider|[Cc]rawl[a-z]*))/(\d+)(?:\.(\d+)(?:\.(\d+))?)?",
    r"(?:\/[A-Za-z0-9\.]+)? *([A-Za-z0-9 _\!\[\]:]*(?:[Aa]rchiver|[Ii]ndexer|[Ss]craper|[Bb]ot|[Ss]pider|[Cc]rawl[a-z]*)) (\d+)(?:\.(\d+)(?:\.(\d+))?)?",
    r"((?:[A-z0-9]+|[A-z\-]+ ?)?(?: the )?(?:[Ss][Pp][Ii][Dd][Ee][Rr]|[Ss]crape|[A-Za-z0-9-]*(?:[^C][^Uu])[Bb]ot|[Cc][Rr][Aa][Ww][Ll])[A-z0-9]*)(?:(?:[ /]| v)(\d+)(?:\.(\d+)(?:\.(\d+))?)?)?",
];

#[derive(Debug, Deserialize)]
struct Config {
    allow: Vec<String>,
    deny: Vec<String>,
}

/// A list entry must compile (Kong checks its regexes at load too).
fn check_regex(v: &Value) -> Result<(), String> {
    let s = v.as_str().unwrap_or_default();
    regex::Regex::new(s)
        .map(|_| ())
        .map_err(|_| format!("not a valid regex: {s}"))
}

pub fn builtin() -> Builtin {
    let config = Schema::new(vec![
        (
            "allow",
            Field::array(Field::string().check(check_regex)).default(Value::Array(vec![])),
        ),
        (
            "deny",
            Field::array(Field::string().check(check_regex)).default(Value::Array(vec![])),
        ),
    ]);
    Builtin::new("bot-detection", 2500, config, build)
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let set = |list: &[String]| RegexSet::new(list).map_err(|e| e.to_string());
    Ok(register(BotDetection {
        allow: set(&config.allow)?,
        deny: set(&config.deny)?,
        bots: bots().clone(),
    }))
}

/// The known-bots set, compiled once per process.
fn bots() -> &'static RegexSet {
    static BOTS_SET: std::sync::OnceLock<RegexSet> = std::sync::OnceLock::new();
    BOTS_SET.get_or_init(|| RegexSet::new(BOTS).expect("the known-bots patterns compile"))
}

struct BotDetection {
    allow: RegexSet,
    deny: RegexSet,
    bots: RegexSet,
}

impl BotDetection {
    /// Whether `agent` (stripped of surrounding white space) is refused.
    fn refuses(&self, agent: &str) -> bool {
        let agent = agent.trim();
        if self.allow.is_match(agent) {
            return false;
        }
        self.deny.is_match(agent) || self.bots.is_match(agent)
    }
}

impl BotDetection {
    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let mut agents = ctx.request.headers.get_all(http::header::USER_AGENT).iter();
        let (Some(agent), more) = (agents.next(), agents.next()) else {
            return Flow::Continue;
        };
        if more.is_some() {
            return Flow::Respond(PluginResponse::message(
                StatusCode::BAD_REQUEST,
                "Only one User-Agent header allowed",
            ));
        }
        let agent = String::from_utf8_lossy(agent.as_bytes());
        if self.refuses(&agent) {
            return Flow::Respond(PluginResponse::message(StatusCode::FORBIDDEN, "Forbidden"));
        }
        Flow::Continue
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: BotDetection) -> Arc<dyn Plugin> {
    Registered::new("bot-detection", plugin)
        .access(BotDetection::access)
        .build()
}

#[cfg(test)]
mod tests;
