//! Settings that name one of a few choices (`rotation = "angular"`,
//! `layout.kind = "imr"`): typed enums in the code, their names in the
//! drive's TOML, and one form of error for a name that is none of them.

/// A setting whose value is one of a few named choices.
pub trait Choice: Copy + PartialEq + Sized + 'static {
    /// The key it is written under in a drive description, for errors.
    const KEY: &'static str;
    /// Every choice by name; a choice named twice takes its first name as
    /// its own and the later ones as aliases.
    const NAMES: &'static [(&'static str, Self)];

    /// The choice's own name (as a drive file writes it).
    fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, c)| *c == self)
            .map(|(n, _)| *n)
            .expect("every choice is named")
    }

    /// The choice a name means, else a one-line error naming the key and
    /// every choice (`rotation 'fast' is not 'average' or 'angular'`).
    fn parse(name: &str) -> Result<Self, String> {
        if let Some((_, c)) = Self::NAMES.iter().find(|(n, _)| *n == name) {
            return Ok(*c);
        }
        let mut own: Vec<&str> = vec![];
        for (n, c) in Self::NAMES {
            if c.name() == *n {
                own.push(n);
            }
        }
        let quoted: Vec<String> = own.iter().map(|n| format!("'{n}'")).collect();
        let list = match quoted.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            Some((last, _)) => last.clone(),
            None => String::new(),
        };
        Err(format!("{} '{name}' is not {list}", Self::KEY))
    }
}

/// Serde by name for a [`Choice`]: written as its name, read from any of
/// its names with [`Choice::parse`]'s error.
macro_rules! serde_by_name {
    ($t:ty) => {
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($crate::choice::Choice::name(*self))
            }
        }
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                <$t as $crate::choice::Choice>::parse(&s).map_err(serde::de::Error::custom)
            }
        }
        /// Tests name choices by their names (a name that is none panics).
        #[cfg(test)]
        impl From<&str> for $t {
            fn from(name: &str) -> Self {
                <$t as $crate::choice::Choice>::parse(name).unwrap()
            }
        }
    };
}
pub(crate) use serde_by_name;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Shade {
        Light,
        Dark,
        Dim,
    }
    impl Choice for Shade {
        const KEY: &'static str = "shade";
        const NAMES: &'static [(&'static str, Self)] = &[
            ("light", Shade::Light),
            ("dark", Shade::Dark),
            ("dim", Shade::Dim),
            ("dusky", Shade::Dim),
        ];
    }
    serde_by_name!(Shade);

    #[test]
    fn a_choice_reads_its_names_and_aliases_and_says_what_it_takes() {
        assert_eq!(Shade::parse("dusky"), Ok(Shade::Dim));
        assert_eq!(Shade::Dim.name(), "dim");
        assert_eq!(
            Shade::parse("grey").unwrap_err(),
            "shade 'grey' is not 'light', 'dark' or 'dim'"
        );
        let s: Shade = serde_json::from_str("\"dark\"").unwrap();
        assert_eq!(s, Shade::Dark);
        assert_eq!(serde_json::to_string(&Shade::Dim).unwrap(), "\"dim\"");
        let e = serde_json::from_str::<Shade>("\"grey\"")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("shade 'grey' is not"), "{e}");
    }
}
