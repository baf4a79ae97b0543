//! The entity kinds of the synthetic world: their generation order, how many of each, and the words
//! the text uses for them. A file of its own because the namer and the world both read it.

/// Entity kinds. The order is the generation order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    Country,
    City,
    Person,
    Company,
    Studio,
    Publisher,
    Ensemble,
    University,
    Film,
    Book,
    Product,
}

impl Kind {
    pub(crate) const ALL: [Kind; 11] = [
        Kind::Country,
        Kind::City,
        Kind::Person,
        Kind::Company,
        Kind::Studio,
        Kind::Publisher,
        Kind::Ensemble,
        Kind::University,
        Kind::Film,
        Kind::Book,
        Kind::Product,
    ];

    /// Share of the world, per mille, and the minimum count.
    pub(super) fn share(self) -> (usize, usize) {
        match self {
            Kind::Country => (50, 3),
            Kind::City => (150, 6),
            Kind::Person => (350, 12),
            Kind::Company => (70, 2),
            Kind::Studio => (40, 2),
            Kind::Publisher => (30, 2),
            Kind::Ensemble => (40, 2),
            Kind::University => (40, 2),
            Kind::Film => (90, 2),
            Kind::Book => (70, 2),
            Kind::Product => (70, 2),
        }
    }

    /// The breadcrumb section of the header.
    pub(crate) fn section(self) -> &'static str {
        match self {
            Kind::Country => "Countries",
            Kind::City => "Cities",
            Kind::Person => "People",
            Kind::Company | Kind::Studio | Kind::Publisher | Kind::Ensemble | Kind::University => {
                "Organisations"
            }
            Kind::Film => "Films",
            Kind::Book => "Books",
            Kind::Product => "Products",
        }
    }

    /// The generic noun phrase used to refer back to an entity inside its own passage.
    pub(crate) fn generic(self) -> &'static str {
        match self {
            Kind::Country => "the country",
            Kind::City => "the city",
            Kind::Person => "the person",
            Kind::Company => "the company",
            Kind::Studio => "the studio",
            Kind::Publisher => "the publisher",
            Kind::Ensemble => "the ensemble",
            Kind::University => "the university",
            Kind::Film => "the film",
            Kind::Book => "the book",
            Kind::Product => "the device",
        }
    }

    /// Lowercase label (for question labels).
    pub(crate) fn label(self) -> &'static str {
        match self {
            Kind::Country => "country",
            Kind::City => "city",
            Kind::Person => "person",
            Kind::Company => "company",
            Kind::Studio => "studio",
            Kind::Publisher => "publisher",
            Kind::Ensemble => "ensemble",
            Kind::University => "university",
            Kind::Film => "film",
            Kind::Book => "book",
            Kind::Product => "product",
        }
    }
}
