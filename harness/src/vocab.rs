//! One mechanism for vocabularies: an enum whose values have spellings (in suites, case ids,
//! reports) derives them with strum, one `#[strum(serialize = "...")]` per variant (or
//! `serialize_all` for a uniform case): `IntoStaticStr` gives the spelling, `EnumString`
//! parses it, `VariantArray` lists every value in declaration order, `Display` prints it.
//! [`Vocabulary`] names the two calls every area makes, `name` and `parse`, once for all such
//! enums. A spelling added or renamed is one edit, beside its variant.

use std::str::FromStr;

/// The spelling of a value and the value of a spelling, for every enum that derives
/// `strum::IntoStaticStr`, `strum::EnumString` and `strum::VariantArray`.
pub trait Vocabulary: Copy + Into<&'static str> + FromStr + strum::VariantArray + 'static {
    /// The spelling in suites, case ids and reports.
    fn name(self) -> &'static str {
        self.into()
    }

    /// The value a spelling names.
    fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }
}

impl<T> Vocabulary for T where T: Copy + Into<&'static str> + FromStr + strum::VariantArray + 'static
{}

#[cfg(test)]
mod tests {
    use super::Vocabulary;
    use strum::VariantArray;

    #[derive(
        Debug,
        Clone,
        Copy,
        PartialEq,
        Eq,
        strum::IntoStaticStr,
        strum::EnumString,
        strum::VariantArray,
        strum::Display,
    )]
    enum Colour {
        #[strum(serialize = "red")]
        Red,
        #[strum(serialize = "light green")]
        Green,
    }

    #[test]
    fn one_list_gives_names_parse_and_all() {
        assert_eq!(Colour::VARIANTS, &[Colour::Red, Colour::Green]);
        assert_eq!(Colour::Green.name(), "light green");
        assert_eq!(Colour::Red.to_string(), "red");
        assert_eq!(Colour::parse("light green"), Some(Colour::Green));
        assert_eq!(<Colour as Vocabulary>::parse("blue"), None);
    }
}
