//! One list per vocabulary: an enum whose values have spellings (in suites, case ids, reports)
//! is declared once with [`vocabulary!`], which writes the enum, its `ALL` table, `name`,
//! `parse` (the spelling or an alias) and `Display` from the same list, as gimli's `dw!` does
//! for DWARF constants. A spelling added, renamed or aliased is one edit.

/// Declare an enum with one spelling per variant and optional aliases:
///
/// ```ignore
/// vocabulary! {
///     #[derive(Debug, Clone, Copy, PartialEq, Eq)]
///     pub enum Colour {
///         /// Doc comments and attributes go on the variant as usual.
///         Red = "red" | "rouge",
///         Green = "green",
///     }
/// }
/// ```
macro_rules! vocabulary {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = $spelling:literal $(| $alias:literal)*
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        #[allow(dead_code)]
        impl $name {
            /// Every value, in declaration order.
            pub(crate) const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The spelling in suites, case ids and reports.
            pub fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $spelling, )+
                }
            }

            /// The value a spelling or an accepted alias names.
            pub fn parse(s: &str) -> Option<$name> {
                match s {
                    $( $spelling $(| $alias)* => Some($name::$variant), )+
                    _ => None,
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

pub(crate) use vocabulary;

#[cfg(test)]
mod tests {
    vocabulary! {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Colour {
            Red = "red" | "rouge",
            Green = "green",
        }
    }

    #[test]
    fn one_list_gives_names_parse_and_all() {
        assert_eq!(Colour::ALL, &[Colour::Red, Colour::Green]);
        assert_eq!(Colour::Green.name(), "green");
        assert_eq!(Colour::Red.to_string(), "red");
        assert_eq!(Colour::parse("rouge"), Some(Colour::Red));
        assert_eq!(Colour::parse("red"), Some(Colour::Red));
        assert_eq!(Colour::parse("blue"), None);
    }
}
