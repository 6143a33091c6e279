use super::*;

fn plugin(allow: &[&str], deny: &[&str]) -> BotDetection {
    let set = |l: &[&str]| RegexSet::new(l).unwrap();
    BotDetection {
        allow: set(allow),
        deny: set(deny),
        bots: bots().clone(),
    }
}

#[test]
fn known_bots_are_refused_and_browsers_pass() {
    let p = plugin(&[], &[]);
    for bot in [
        "Googlebot/2.1 (+http://www.google.com/bot.html)",
        "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
        "facebookexternalhit/1.1",
        "Twitterbot/1.0",
        "Apache-HttpClient/4.5.13 (Java/17)",
        "Python-urllib/3.11",
    ] {
        assert!(p.refuses(bot), "{bot}");
    }
    for browser in [
        "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0",
        "curl/8.5.0",
        "Mozilla/5.0 (Linux; Android 14; CUBOT X30) AppleWebKit/537.36",
    ] {
        assert!(!p.refuses(browser), "{browser}");
    }
}

#[test]
fn allow_wins_over_deny_and_the_bot_list() {
    let p = plugin(&["Googlebot"], &["^curl/"]);
    assert!(!p.refuses("Googlebot/2.1"));
    assert!(p.refuses("curl/8.5.0"));
    assert!(p.refuses("  curl/8.5.0  "), "white space is stripped first");
}
