"""Real-world facts behind the demo knowledge graph, as compact hand-written tables.

One record per line, fields separated by `` | ``, list items by ``; ``. ``build.py`` turns
these tables into Freebase-schema triples (with CVT nodes, typed literals, types and
names) and generates the demo questions. Figures are rounded public figures; an empty
field means "not recorded".
"""

# name | capital | continent | official languages | currency | area km2 | pop 2010 | pop 2020
# | calling code | ISO alpha-3 | form of government
COUNTRIES = """
United States | Washington, D.C. | North America | English | United States dollar | 9833520 | 309321666 | 331501080 | 1 | USA | Presidential system
China | Beijing | Asia | Standard Chinese | Renminbi | 9596961 | 1337705000 | 1411100000 | 86 | CHN | One-party state
India | New Delhi | Asia | Hindi; English | Indian rupee | 3287263 | 1234281000 | 1396387000 | 91 | IND | Parliamentary republic
Japan | Tokyo | Asia | Japanese | Japanese yen | 377975 | 128070000 | 126261000 | 81 | JPN | Constitutional monarchy
Germany | Berlin | Europe | German | Euro | 357022 | 81776930 | 83160871 | 49 | DEU | Parliamentary republic
France | Paris | Europe | French | Euro | 643801 | 65027000 | 67571000 | 33 | FRA | Semi-presidential system
United Kingdom | London | Europe | English | Pound sterling | 242495 | 62766000 | 67081000 | 44 | GBR | Constitutional monarchy
Italy | Rome | Europe | Italian | Euro | 301340 | 59277000 | 59439000 | 39 | ITA | Parliamentary republic
Spain | Madrid | Europe | Spanish | Euro | 505990 | 46577000 | 47365000 | 34 | ESP | Constitutional monarchy
Canada | Ottawa | North America | English; French | Canadian dollar | 9984670 | 34005000 | 38037000 | 1 | CAN | Constitutional monarchy
Brazil | Brasília | South America | Portuguese | Brazilian real | 8515767 | 196353000 | 213196000 | 55 | BRA | Presidential system
Mexico | Mexico City | North America | Spanish | Mexican peso | 1964375 | 114093000 | 125998000 | 52 | MEX | Presidential system
Australia | Canberra | Oceania | English | Australian dollar | 7692024 | 22031000 | 25655000 | 61 | AUS | Constitutional monarchy
Russia | Moscow | Europe | Russian | Russian ruble | 17098246 | 142849000 | 144073000 | 7 | RUS | Semi-presidential system
Egypt | Cairo | Africa | Arabic | Egyptian pound | 1002450 | 87253000 | 107465000 | 20 | EGY | Semi-presidential system
Nigeria | Abuja | Africa | English | Nigerian naira | 923768 | 160953000 | 208327000 | 234 | NGA | Presidential system
South Africa | Pretoria | Africa | English; Afrikaans; Zulu | South African rand | 1221037 | 51217000 | 58802000 | 27 | ZAF |
Argentina | Buenos Aires | South America | Spanish | Argentine peso | 2780400 | 40789000 | 45377000 | 54 | ARG | Presidential system
Kenya | Nairobi | Africa | English; Swahili | Kenyan shilling | 580367 | 42031000 | 51986000 | 254 | KEN | Presidential system
Portugal | Lisbon | Europe | Portuguese | Euro | 92212 | 10573000 | 10297000 | 351 | PRT | Semi-presidential system
Netherlands | Amsterdam | Europe | Dutch | Euro | 41850 | 16615000 | 17441000 | 31 | NLD | Constitutional monarchy
Sweden | Stockholm | Europe | Swedish | Swedish krona | 450295 | 9378000 | 10353000 | 46 | SWE | Constitutional monarchy
Norway | Oslo | Europe | Norwegian | Norwegian krone | 385207 | 4889000 | 5379000 | 47 | NOR | Constitutional monarchy
Greece | Athens | Europe | Greek | Euro | 131957 | 11121000 | 10700000 | 30 | GRC | Parliamentary republic
Poland | Warsaw | Europe | Polish | Polish złoty | 312696 | 38043000 | 37899000 | 48 | POL | Parliamentary republic
Turkey | Ankara | Asia | Turkish | Turkish lira | 783562 | 73142000 | 84135000 | 90 | TUR | Presidential system
South Korea | Seoul | Asia | Korean | South Korean won | 100210 | 49554000 | 51836000 | 82 | KOR | Presidential system
Indonesia | Jakarta | Asia | Indonesian | Indonesian rupiah | 1904569 | 244016000 | 271858000 | 62 | IDN | Presidential system
Peru | Lima | South America | Spanish; Quechua | Peruvian sol | 1285216 | 29374000 | 33305000 | 51 | PER | Presidential system
Chile | Santiago | South America | Spanish | Chilean peso | 756102 | 17063000 | 19300000 | 56 | CHL | Presidential system
Colombia | Bogotá | South America | Spanish | Colombian peso | 1141748 | 44816000 | 50930000 | 57 | COL | Presidential system
New Zealand | Wellington | Oceania | English; Māori | New Zealand dollar | 268021 | 4350000 | 5090000 | 64 | NZL | Constitutional monarchy
Ireland | Dublin | Europe | Irish; English | Euro | 70273 | 4560000 | 4986000 | 353 | IRL | Parliamentary republic
Austria | Vienna | Europe | German | Euro | 83879 | 8363000 | 8917000 | 43 | AUT | Parliamentary republic
Switzerland | Bern | Europe | German; French; Italian; Romansh | Swiss franc | 41285 | 7825000 | 8638000 | 41 | CHE |
Belgium | Brussels | Europe | Dutch; French; German | Euro | 30689 | 10896000 | 11538000 | 32 | BEL | Constitutional monarchy
Morocco | Rabat | Africa | Arabic; Berber | Moroccan dirham | 446550 | 32343000 | 36689000 | 212 | MAR | Constitutional monarchy
Thailand | Bangkok | Asia | Thai | Thai baht | 513120 | 67195000 | 71476000 | 66 | THA | Constitutional monarchy
Vietnam | Hanoi | Asia | Vietnamese | Vietnamese đồng | 331212 | 87411000 | 96649000 | 84 | VNM | One-party state
Cuba | Havana | North America | Spanish | Cuban peso | 109884 | 11290000 | 11300000 | 53 | CUB | One-party state
"""

# alias lines: entity name | alias; alias
ALIASES = """
United States | USA; United States of America; US
United Kingdom | UK; Great Britain; Britain
Washington, D.C. | Washington
New York City | New York; NYC
Renminbi | Chinese yuan
Standard Chinese | Mandarin Chinese
Saint Petersburg | St. Petersburg
Los Angeles | LA
Massachusetts Institute of Technology | MIT
FC Barcelona | Barça
Manchester United F.C. | Manchester United
Liverpool F.C. | Liverpool FC
Real Madrid CF | Real Madrid
FC Bayern Munich | Bayern Munich
Paris Saint-Germain F.C. | Paris Saint-Germain; PSG
Apple Inc. | Apple
Meta Platforms | Facebook
Tesla, Inc. | Tesla
Google | Google LLC
E.T. the Extra-Terrestrial | E.T.
Star Wars | Star Wars: Episode IV – A New Hope
Nineteen Eighty-Four | 1984
John F. Kennedy | JFK
Franklin D. Roosevelt | FDR
"""

# currency | ISO 4217 code
CURRENCY_CODES = """
United States dollar | USD
Renminbi | CNY
Indian rupee | INR
Japanese yen | JPY
Euro | EUR
Pound sterling | GBP
Canadian dollar | CAD
Brazilian real | BRL
Mexican peso | MXN
Australian dollar | AUD
Russian ruble | RUB
Egyptian pound | EGP
Nigerian naira | NGN
South African rand | ZAR
Argentine peso | ARS
Kenyan shilling | KES
Swedish krona | SEK
Norwegian krone | NOK
Polish złoty | PLN
Turkish lira | TRY
South Korean won | KRW
Indonesian rupiah | IDR
Peruvian sol | PEN
Chilean peso | CLP
Colombian peso | COP
New Zealand dollar | NZD
Swiss franc | CHF
Moroccan dirham | MAD
Thai baht | THB
Vietnamese đồng | VND
Cuban peso | CUP
"""

BORDERS = """
United States | Canada
United States | Mexico
France | Spain
France | Germany
France | Italy
France | Belgium
France | Switzerland
Germany | Austria
Germany | Poland
Germany | Netherlands
Germany | Belgium
Germany | Switzerland
Spain | Portugal
Italy | Switzerland
Italy | Austria
Sweden | Norway
Russia | China
Russia | Norway
Russia | Poland
China | India
China | Vietnam
Brazil | Argentina
Brazil | Peru
Brazil | Colombia
Argentina | Chile
Peru | Chile
Peru | Colombia
Greece | Turkey
Ireland | United Kingdom
Austria | Switzerland
Belgium | Netherlands
"""

# city | country | population | census year  (empty population: not recorded)
CITIES = """
Washington, D.C. | United States | 689545 | 2020
New York City | United States | 8804190 | 2020
Los Angeles | United States | 3898747 | 2020
Chicago | United States | 2746388 | 2020
San Francisco | United States | 873965 | 2020
Seattle | United States | 737015 | 2020
Boston | United States | 675647 | 2020
Honolulu | United States | 350964 | 2020
Detroit | United States | 639111 | 2020
Cincinnati | United States | 309317 | 2020
Philadelphia | United States | 1603797 | 2020
Houston | United States | 2304580 | 2020
Memphis | United States | 633104 | 2020
Sacramento | United States | 524943 | 2020
Princeton | United States | 30681 | 2020
Cambridge, Massachusetts | United States | 118403 | 2020
New Haven | United States | 134023 | 2020
Stanford | United States | |
Berkeley | United States | 124321 | 2020
Cupertino | United States | 60381 | 2020
Redmond | United States | 73256 | 2020
Mountain View | United States | 82376 | 2020
Menlo Park | United States | 33780 | 2020
Austin | United States | 961855 | 2020
Los Gatos | United States | 33529 | 2020
Burbank | United States | 107337 | 2020
Hawthorne | United States | 88083 | 2020
Palo Alto | United States | 68572 | 2020
San Jose | United States | 1013240 | 2020
Albuquerque | United States | 564559 | 2020
White Plains | United States | 59559 | 2020
East Lansing | United States | 47741 | 2020
Mobile | United States | 187041 | 2020
Dallas | United States | 1304379 | 2020
Scranton | United States | 76328 | 2020
Akron | United States | 190469 | 2020
Baltimore | United States | 585708 | 2020
Cleveland | United States | 372624 | 2020
Miami | United States | 442241 | 2020
Tampa | United States | 384959 | 2020
Foxborough | United States | 18618 | 2020
Ottawa | Canada | 1017449 | 2021
Toronto | Canada | 2794356 | 2021
Vancouver | Canada | 662248 | 2021
Montreal | Canada | 1762949 | 2021
Beijing | China | 21893095 | 2020
Shanghai | China | 24870895 | 2020
New Delhi | India | 249998 | 2011
Mumbai | India | 12442373 | 2011
Hyderabad | India | 6809970 | 2011
Madurai | India | 1017865 | 2011
Tokyo | Japan | 14047594 | 2020
Osaka | Japan | 2752412 | 2020
Kyoto | Japan | 1463723 | 2020
Nagoya | Japan | 2332176 | 2020
Toyota City | Japan | 422330 | 2020
Berlin | Germany | 3677472 | 2021
Munich | Germany | 1487708 | 2021
Hamburg | Germany | 1853935 | 2021
Ulm | Germany | 126329 | 2021
Bonn | Germany | 330579 | 2021
Leipzig | Germany | 601866 | 2021
Frankfurt | Germany | 759224 | 2021
Wolfsburg | Germany | 123949 | 2021
Paris | France | 2145906 | 2020
Lyon | France | 522250 | 2020
Marseille | France | 870321 | 2020
Lille | France | 236710 | 2020
Amiens | France | 133625 | 2020
London | United Kingdom | 8799800 | 2021
Manchester | United Kingdom | 552000 | 2021
Liverpool | United Kingdom | 486100 | 2021
Edinburgh | United Kingdom | 506520 | 2021
Oxford | United Kingdom | 162100 | 2021
Cambridge | United Kingdom | 145700 | 2021
Stratford-upon-Avon | United Kingdom | 30495 | 2021
Shrewsbury | United Kingdom | 76782 | 2021
Portsmouth | United Kingdom | 208100 | 2021
Grantham | United Kingdom | 45000 | 2021
Southampton | United Kingdom | 248900 | 2021
Rome | Italy | 2872800 | 2020
Milan | Italy | 1396059 | 2020
Florence | Italy | 382258 | 2020
Naples | Italy | 959188 | 2020
Turin | Italy | 870952 | 2020
Pisa | Italy | 90118 | 2020
Madrid | Spain | 3305408 | 2021
Barcelona | Spain | 1636193 | 2021
Seville | Spain | 684234 | 2021
Málaga | Spain | 577405 | 2021
Brasília | Brazil | 3055149 | 2020
São Paulo | Brazil | 12325232 | 2020
Rio de Janeiro | Brazil | 6747815 | 2020
Mexico City | Mexico | 9209944 | 2020
Guadalajara | Mexico | 1385629 | 2020
Canberra | Australia | 431380 | 2021
Sydney | Australia | 5312163 | 2021
Melbourne | Australia | 5078193 | 2021
Perth | Australia | 2192229 | 2021
Moscow | Russia | 12655050 | 2021
Saint Petersburg | Russia | 5384342 | 2021
Cairo | Egypt | 9539673 | 2017
Abuja | Nigeria | 1235880 | 2011
Lagos | Nigeria | |
Pretoria | South Africa | 741651 | 2011
Cape Town | South Africa | 433688 | 2011
Johannesburg | South Africa | 957441 | 2011
Bloemfontein | South Africa | 256185 | 2011
Buenos Aires | Argentina | 3075646 | 2022
Rosario | Argentina | 1276000 | 2010
Nairobi | Kenya | 4397073 | 2019
Lisbon | Portugal | 545796 | 2021
Porto | Portugal | 231800 | 2021
Funchal | Portugal | 105782 | 2021
Amsterdam | Netherlands | 872680 | 2020
Stockholm | Sweden | 975551 | 2020
Oslo | Norway | 697010 | 2020
Athens | Greece | 643452 | 2021
Warsaw | Poland | 1860281 | 2021
Ankara | Turkey | 5663322 | 2020
Istanbul | Turkey | 15462452 | 2020
Seoul | South Korea | 9586195 | 2020
Suwon | South Korea | 1186078 | 2020
Jakarta | Indonesia | 10562088 | 2020
Lima | Peru | 9751717 | 2017
Santiago | Chile | 6257516 | 2017
Bogotá | Colombia | 7412566 | 2018
Barranquilla | Colombia | 1206319 | 2018
Wellington | New Zealand | 215400 | 2021
Auckland | New Zealand | 1695200 | 2021
Dublin | Ireland | 592713 | 2022
Vienna | Austria | 1911191 | 2021
Salzburg | Austria | 155021 | 2021
Bern | Switzerland | 134794 | 2020
Zürich | Switzerland | 421878 | 2020
Geneva | Switzerland | 203856 | 2020
Basel | Switzerland | 173863 | 2020
Vevey | Switzerland | 19904 | 2020
Brussels | Belgium | 1218255 | 2021
Rabat | Morocco | 577827 | 2014
Bangkok | Thailand | 10539000 | 2020
Hanoi | Vietnam | 8053663 | 2019
Havana | Cuba | 2130081 | 2019
"""

# name | date of birth | place of birth | nationality (;) | gender | professions (;)
# | date of death | place of death | height (m)
PEOPLE = """
Albert Einstein | 1879-03-14 | Ulm | Germany; Switzerland; United States | male | Physicist | 1955-04-18 | Princeton | 1.75
Marie Curie | 1867-11-07 | Warsaw | Poland; France | female | Physicist; Chemist | 1934-07-04 | |
Pierre Curie | 1859-05-15 | Paris | France | male | Physicist | 1906-04-19 | Paris |
Isaac Newton | 1643-01-04 | | United Kingdom | male | Physicist; Mathematician | 1727-03-31 | London |
Charles Darwin | 1809-02-12 | Shrewsbury | United Kingdom | male | Naturalist | 1882-04-19 | |
Ada Lovelace | 1815-12-10 | London | United Kingdom | female | Mathematician | 1852-11-27 | London |
Alan Turing | 1912-06-23 | London | United Kingdom | male | Mathematician; Computer scientist | 1954-06-07 | |
Nikola Tesla | 1856-07-10 | | United States | male | Inventor; Engineer | 1943-01-07 | New York City | 1.88
Galileo Galilei | 1564-02-15 | Pisa | Italy | male | Astronomer; Physicist | 1642-01-08 | |
Stephen Hawking | 1942-01-08 | Oxford | United Kingdom | male | Physicist | 2018-03-14 | Cambridge |
William Shakespeare | 1564-04-23 | Stratford-upon-Avon | United Kingdom | male | Playwright; Poet | 1616-04-23 | Stratford-upon-Avon |
Jane Austen | 1775-12-16 | | United Kingdom | female | Novelist | 1817-07-18 | |
Charles Dickens | 1812-02-07 | Portsmouth | United Kingdom | male | Novelist | 1870-06-09 | |
Mark Twain | 1835-11-30 | | United States | male | Novelist; Humorist | 1910-04-21 | |
Leo Tolstoy | 1828-09-09 | | Russia | male | Novelist | 1910-11-20 | |
Fyodor Dostoevsky | 1821-11-11 | Moscow | Russia | male | Novelist | 1881-02-09 | Saint Petersburg |
Gabriel García Márquez | 1927-03-06 | | Colombia | male | Novelist; Journalist | 2014-04-17 | Mexico City |
George Orwell | 1903-06-25 | | United Kingdom | male | Novelist; Journalist | 1950-01-21 | London |
J. K. Rowling | 1965-07-31 | | United Kingdom | female | Novelist | | |
Haruki Murakami | 1949-01-12 | Kyoto | Japan | male | Novelist | | |
Ernest Hemingway | 1899-07-21 | | United States | male | Novelist; Journalist | 1961-07-02 | |
Virginia Woolf | 1882-01-25 | London | United Kingdom | female | Novelist | 1941-03-28 | |
Miguel de Cervantes | 1547-09-29 | | Spain | male | Novelist | 1616-04-22 | Madrid |
Victor Hugo | 1802-02-26 | | France | male | Novelist; Poet | 1885-05-22 | Paris |
Toni Morrison | 1931-02-18 | | United States | female | Novelist | 2019-08-05 | |
Chinua Achebe | 1930-11-16 | | Nigeria | male | Novelist | 2013-03-21 | Boston |
J. R. R. Tolkien | 1892-01-03 | Bloemfontein | United Kingdom | male | Novelist; Philologist | 1973-09-02 | |
Agatha Christie | 1890-09-15 | | United Kingdom | female | Novelist | 1976-01-12 | |
Paulo Coelho | 1947-08-24 | Rio de Janeiro | Brazil | male | Novelist | | |
Mario Puzo | 1920-10-15 | New York City | United States | male | Novelist; Screenwriter | 1999-07-02 | |
Francis Ford Coppola | 1939-04-07 | Detroit | United States | male | Film director; Screenwriter; Film producer | | |
Martin Scorsese | 1942-11-17 | New York City | United States | male | Film director; Film producer | | | 1.63
James Cameron | 1954-08-16 | | Canada | male | Film director; Screenwriter | | | 1.88
Ridley Scott | 1937-11-30 | | United Kingdom | male | Film director; Film producer | | |
Steven Spielberg | 1946-12-18 | Cincinnati | United States | male | Film director; Film producer | | | 1.72
George Lucas | 1944-05-14 | | United States | male | Film director; Film producer; Screenwriter | | |
Quentin Tarantino | 1963-03-27 | | United States | male | Film director; Screenwriter; Actor | | | 1.85
Christopher Nolan | 1970-07-30 | London | United Kingdom; United States | male | Film director; Screenwriter; Film producer | | | 1.81
Robert Zemeckis | 1952-05-14 | Chicago | United States | male | Film director | | |
Frank Darabont | 1959-01-28 | | United States | male | Film director; Screenwriter | | |
Alfred Hitchcock | 1899-08-13 | London | United Kingdom | male | Film director | 1980-04-29 | Los Angeles |
Hayao Miyazaki | 1941-01-05 | Tokyo | Japan | male | Film director; Animator | | |
Akira Kurosawa | 1910-03-23 | Tokyo | Japan | male | Film director | 1998-09-06 | Tokyo |
Bong Joon-ho | 1969-09-14 | | South Korea | male | Film director; Screenwriter | | |
Jean-Pierre Jeunet | 1953-09-03 | | France | male | Film director | | |
Roberto Benigni | 1952-10-27 | | Italy | male | Film director; Actor | | |
Giuseppe Tornatore | 1956-05-27 | | Italy | male | Film director | | |
Guillermo del Toro | 1964-10-09 | Guadalajara | Mexico | male | Film director; Screenwriter | | |
Fernando Meirelles | 1955-11-09 | São Paulo | Brazil | male | Film director | | |
Peter Jackson | 1961-10-31 | Wellington | New Zealand | male | Film director; Film producer | | |
Chris Columbus | 1958-09-10 | | United States | male | Film director | | |
Greta Gerwig | 1983-08-04 | Sacramento | United States | female | Film director; Actor | | | 1.75
Jordan Peele | 1979-02-21 | New York City | United States | male | Film director; Actor | | |
George Miller | 1945-03-03 | | Australia | male | Film director | | |
Baz Luhrmann | 1962-09-17 | Sydney | Australia | male | Film director | | |
Marlon Brando | 1924-04-03 | | United States | male | Actor | 2004-07-01 | Los Angeles | 1.75
Al Pacino | 1940-04-25 | New York City | United States | male | Actor | | | 1.70
James Caan | 1940-03-26 | New York City | United States | male | Actor | 2022-07-06 | Los Angeles |
Diane Keaton | 1946-01-05 | Los Angeles | United States | female | Actor | | |
Robert De Niro | 1943-08-17 | New York City | United States | male | Actor | | | 1.77
Martin Sheen | 1940-08-03 | | United States | male | Actor | | |
Jodie Foster | 1962-11-19 | Los Angeles | United States | female | Actor; Film director | | | 1.60
Ray Liotta | 1954-12-18 | | United States | male | Actor | 2022-05-26 | |
Joe Pesci | 1943-02-09 | | United States | male | Actor | | | 1.63
Leonardo DiCaprio | 1974-11-11 | Los Angeles | United States | male | Actor; Film producer | | | 1.83
Matt Damon | 1970-10-08 | | United States | male | Actor | | | 1.78
Jack Nicholson | 1937-04-22 | | United States | male | Actor | | | 1.77
Margot Robbie | 1990-07-02 | | Australia | female | Actor; Film producer | | | 1.68
Kate Winslet | 1975-10-05 | | United Kingdom | female | Actor | | | 1.69
Sam Worthington | 1976-08-02 | | Australia | male | Actor | | |
Zoe Saldaña | 1978-06-19 | | United States | female | Actor | | |
Sigourney Weaver | 1949-10-08 | New York City | United States | female | Actor | | | 1.82
Arnold Schwarzenegger | 1947-07-30 | | Austria; United States | male | Actor; Politician; Bodybuilder | | | 1.88
Linda Hamilton | 1956-09-26 | | United States | female | Actor | | |
Russell Crowe | 1964-04-07 | Wellington | New Zealand; Australia | male | Actor | | | 1.82
Joaquin Phoenix | 1974-10-28 | | United States | male | Actor | | |
Harrison Ford | 1942-07-13 | Chicago | United States | male | Actor | | | 1.85
Roy Scheider | 1932-11-10 | | United States | male | Actor | 2008-02-10 | |
Henry Thomas | 1971-09-09 | | United States | male | Actor | | |
Sam Neill | 1947-09-14 | | New Zealand | male | Actor | | |
Laura Dern | 1967-02-10 | Los Angeles | United States | female | Actor | | |
Jeff Goldblum | 1952-10-22 | | United States | male | Actor | | | 1.94
Liam Neeson | 1952-06-07 | | United Kingdom; Ireland | male | Actor | | | 1.93
Ralph Fiennes | 1962-12-22 | | United Kingdom | male | Actor | | |
Tom Hanks | 1956-07-09 | | United States | male | Actor; Film producer | | | 1.83
Rita Wilson | 1956-10-26 | Los Angeles | United States | female | Actor; Singer | | |
Mark Hamill | 1951-09-25 | | United States | male | Actor | | |
Carrie Fisher | 1956-10-21 | | United States | female | Actor; Novelist | 2016-12-27 | Los Angeles |
John Travolta | 1954-02-18 | | United States | male | Actor | | |
Samuel L. Jackson | 1948-12-21 | Washington, D.C. | United States | male | Actor | | | 1.89
Uma Thurman | 1970-04-29 | Boston | United States | female | Actor | | | 1.80
Jamie Foxx | 1967-12-13 | | United States | male | Actor; Singer | | |
Christoph Waltz | 1956-10-04 | Vienna | Austria; Germany | male | Actor | | |
Brad Pitt | 1963-12-18 | | United States | male | Actor; Film producer | | | 1.80
Angelina Jolie | 1975-06-04 | Los Angeles | United States | female | Actor; Film director | | |
Jennifer Aniston | 1969-02-11 | Los Angeles | United States | female | Actor | | |
Joseph Gordon-Levitt | 1981-02-17 | Los Angeles | United States | male | Actor | | |
Elliot Page | 1987-02-21 | | Canada | male | Actor | | |
Christian Bale | 1974-01-30 | | United Kingdom | male | Actor | | | 1.83
Heath Ledger | 1979-04-04 | Perth | Australia | male | Actor | 2008-01-22 | New York City | 1.85
Matthew McConaughey | 1969-11-04 | | United States | male | Actor | | |
Anne Hathaway | 1982-11-12 | New York City | United States | female | Actor | | |
Cillian Murphy | 1976-05-25 | | Ireland | male | Actor | | | 1.72
Emily Blunt | 1983-02-23 | London | United Kingdom | female | Actor | | |
Robert Downey Jr. | 1965-04-04 | New York City | United States | male | Actor | | | 1.74
Guy Pearce | 1967-10-05 | | Australia | male | Actor | | |
Robin Wright | 1966-04-08 | | United States | female | Actor | | |
Michael J. Fox | 1961-06-09 | | Canada; United States | male | Actor | | | 1.63
Christopher Lloyd | 1938-10-22 | | United States | male | Actor | | |
Tim Robbins | 1958-10-16 | | United States | male | Actor | | | 1.96
Morgan Freeman | 1937-06-01 | Memphis | United States | male | Actor | | | 1.88
Michael Clarke Duncan | 1957-12-10 | Chicago | United States | male | Actor | 2012-09-03 | Los Angeles | 1.96
Anthony Perkins | 1932-04-04 | New York City | United States | male | Actor | 1992-09-12 | Los Angeles |
Janet Leigh | 1927-07-06 | | United States | female | Actor | 2004-10-03 | Los Angeles |
James Stewart | 1908-05-20 | | United States | male | Actor | 1997-07-02 | Los Angeles | 1.91
Kim Novak | 1933-02-13 | Chicago | United States | female | Actor | | |
Grace Kelly | 1929-11-12 | Philadelphia | United States | female | Actor | 1982-09-14 | |
Rumi Hiiragi | 1987-08-01 | Tokyo | Japan | female | Actor | | |
Toshiro Mifune | 1920-04-01 | | Japan | male | Actor | 1997-12-24 | |
Takashi Shimura | 1905-03-12 | | Japan | male | Actor | 1982-02-11 | |
Song Kang-ho | 1967-01-17 | | South Korea | male | Actor | | |
Audrey Tautou | 1976-08-09 | | France | female | Actor | | |
Philippe Noiret | 1930-10-01 | | France | male | Actor | 2006-11-23 | Paris |
Ivana Baquero | 1994-06-11 | Barcelona | Spain | female | Actor | | |
Sally Hawkins | 1976-04-27 | London | United Kingdom | female | Actor | | |
Alexandre Rodrigues | 1983-05-21 | Rio de Janeiro | Brazil | male | Actor | | |
Elijah Wood | 1981-01-28 | | United States | male | Actor | | | 1.68
Ian McKellen | 1939-05-25 | | United Kingdom | male | Actor | | | 1.80
Viggo Mortensen | 1958-10-20 | New York City | United States | male | Actor | | |
Daniel Radcliffe | 1989-07-23 | London | United Kingdom | male | Actor | | | 1.65
Emma Watson | 1990-04-15 | Paris | United Kingdom | female | Actor | | | 1.65
Rupert Grint | 1988-08-24 | | United Kingdom | male | Actor | | |
Macaulay Culkin | 1980-08-26 | New York City | United States | male | Actor | | |
Ryan Gosling | 1980-11-12 | | Canada | male | Actor | | | 1.84
Saoirse Ronan | 1994-04-12 | New York City | Ireland; United States | female | Actor | | |
Florence Pugh | 1996-01-03 | Oxford | United Kingdom | female | Actor | | |
Daniel Kaluuya | 1989-02-24 | London | United Kingdom | male | Actor | | |
Tom Hardy | 1977-09-15 | London | United Kingdom | male | Actor | | |
Charlize Theron | 1975-08-07 | | South Africa; United States | female | Actor | | | 1.77
Claire Danes | 1979-04-12 | New York City | United States | female | Actor | | |
Elizabeth Taylor | 1932-02-27 | London | United Kingdom; United States | female | Actor | 2011-03-23 | Los Angeles |
Richard Burton | 1925-11-10 | | United Kingdom | male | Actor | 1984-08-05 | |
Ronald Reagan | 1911-02-06 | | United States | male | Politician; Actor | 2004-06-05 | Los Angeles | 1.85
John Lennon | 1940-10-09 | Liverpool | United Kingdom | male | Musician; Singer-songwriter | 1980-12-08 | New York City |
Yoko Ono | 1933-02-18 | Tokyo | Japan | female | Musician; Artist | | |
Cynthia Lennon | 1939-09-10 | | United Kingdom | female | Artist | 2015-04-01 | |
Paul McCartney | 1942-06-18 | Liverpool | United Kingdom | male | Musician; Singer-songwriter | | | 1.80
Linda McCartney | 1941-09-24 | New York City | United States | female | Musician; Photographer | 1998-04-17 | |
George Harrison | 1943-02-25 | Liverpool | United Kingdom | male | Musician | 2001-11-29 | Los Angeles |
Ringo Starr | 1940-07-07 | Liverpool | United Kingdom | male | Musician | | | 1.70
Freddie Mercury | 1946-09-05 | | United Kingdom | male | Singer-songwriter | 1991-11-24 | London | 1.77
Brian May | 1947-07-19 | London | United Kingdom | male | Musician; Astrophysicist | | |
Agnetha Fältskog | 1950-04-05 | | Sweden | female | Singer | | |
Björn Ulvaeus | 1945-04-25 | | Sweden | male | Musician; Songwriter | | |
Benny Andersson | 1946-12-16 | Stockholm | Sweden | male | Musician; Songwriter | | |
Anni-Frid Lyngstad | 1945-11-15 | | Sweden | female | Singer | | |
Michael Jackson | 1958-08-29 | | United States | male | Singer-songwriter | 2009-06-25 | Los Angeles | 1.75
Madonna | 1958-08-16 | | United States | female | Singer-songwriter; Actor | | | 1.63
Beyoncé | 1981-09-04 | Houston | United States | female | Singer-songwriter | | | 1.69
Jay-Z | 1969-12-04 | New York City | United States | male | Rapper; Businessperson | | | 1.87
Taylor Swift | 1989-12-13 | | United States | female | Singer-songwriter | | | 1.80
Adele | 1988-05-05 | London | United Kingdom | female | Singer-songwriter | | |
David Bowie | 1947-01-08 | London | United Kingdom | male | Singer-songwriter; Actor | 2016-01-10 | New York City | 1.78
Elvis Presley | 1935-01-08 | | United States | male | Singer; Actor | 1977-08-16 | Memphis | 1.82
Shakira | 1977-02-02 | Barranquilla | Colombia | female | Singer-songwriter | | | 1.57
Wolfgang Amadeus Mozart | 1756-01-27 | Salzburg | Austria | male | Composer | 1791-12-05 | Vienna |
Ludwig van Beethoven | 1770-12-17 | Bonn | Germany | male | Composer; Pianist | 1827-03-26 | Vienna |
Johann Sebastian Bach | 1685-03-31 | | Germany | male | Composer | 1750-07-28 | Leipzig |
Frédéric Chopin | 1810-03-01 | | Poland | male | Composer; Pianist | 1849-10-17 | Paris |
Frida Kahlo | 1907-07-06 | Mexico City | Mexico | female | Painter | 1954-07-13 | Mexico City |
Diego Rivera | 1886-12-08 | | Mexico | male | Painter | 1957-11-24 | Mexico City |
Pablo Picasso | 1881-10-25 | Málaga | Spain | male | Painter; Sculptor | 1973-04-08 | |
Olga Khokhlova | 1891-06-17 | | Russia | female | Dancer | 1955-02-11 | |
Jacqueline Roque | 1927-02-24 | Paris | France | female | | 1986-10-15 | |
Lionel Messi | 1987-06-24 | Rosario | Argentina | male | Footballer | | | 1.70
Cristiano Ronaldo | 1985-02-05 | Funchal | Portugal | male | Footballer | | | 1.87
Zinedine Zidane | 1972-06-23 | Marseille | France | male | Footballer; Football manager | | | 1.85
Mohamed Salah | 1992-06-15 | | Egypt | male | Footballer | | | 1.75
Michael Jordan | 1963-02-17 | New York City | United States | male | Basketball player; Businessperson | | | 1.98
LeBron James | 1984-12-30 | Akron | United States | male | Basketball player | | | 2.06
Kobe Bryant | 1978-08-23 | Philadelphia | United States | male | Basketball player | 2020-01-26 | | 1.98
Stephen Curry | 1988-03-14 | Akron | United States | male | Basketball player | | | 1.88
Tom Brady | 1977-08-03 | | United States | male | American football player | | | 1.93
Derek Jeter | 1974-06-26 | | United States | male | Baseball player | | | 1.91
Babe Ruth | 1895-02-06 | Baltimore | United States | male | Baseball player | 1948-08-16 | New York City | 1.88
Roger Federer | 1981-08-08 | Basel | Switzerland | male | Tennis player | | | 1.85
Rafael Nadal | 1986-06-03 | | Spain | male | Tennis player | | | 1.85
Serena Williams | 1981-09-26 | | United States | female | Tennis player | | | 1.75
Steve Jobs | 1955-02-24 | San Francisco | United States | male | Businessperson; Inventor | 2011-10-05 | Palo Alto | 1.88
Steve Wozniak | 1950-08-11 | San Jose | United States | male | Engineer; Inventor | | |
Bill Gates | 1955-10-28 | Seattle | United States | male | Businessperson; Philanthropist | | | 1.77
Melinda French Gates | 1964-08-15 | Dallas | United States | female | Philanthropist | | |
Paul Allen | 1953-01-21 | Seattle | United States | male | Businessperson | 2018-10-15 | Seattle |
Larry Page | 1973-03-26 | East Lansing | United States | male | Computer scientist; Businessperson | | |
Sergey Brin | 1973-08-21 | Moscow | United States | male | Computer scientist; Businessperson | | |
Jeff Bezos | 1964-01-12 | Albuquerque | United States | male | Businessperson | | | 1.71
Mark Zuckerberg | 1984-05-14 | White Plains | United States | male | Businessperson; Computer scientist | | | 1.71
Elon Musk | 1971-06-28 | Pretoria | South Africa; Canada; United States | male | Businessperson; Engineer | | | 1.88
Tim Cook | 1960-11-01 | Mobile | United States | male | Businessperson | | |
Satya Nadella | 1967-08-19 | Hyderabad | United States | male | Businessperson; Engineer | | |
Sundar Pichai | 1972-06-10 | Madurai | United States | male | Businessperson; Engineer | | |
Steve Ballmer | 1956-03-24 | Detroit | United States | male | Businessperson | | | 1.96
Eric Schmidt | 1955-04-27 | | United States | male | Businessperson; Engineer | | |
Andy Jassy | 1968-01-13 | | United States | male | Businessperson | | |
Walt Disney | 1901-12-05 | Chicago | United States | male | Film producer; Animator; Businessperson | 1966-12-15 | Burbank |
Roy O. Disney | 1893-06-24 | Chicago | United States | male | Businessperson | 1971-12-20 | Burbank |
Reed Hastings | 1960-10-08 | Boston | United States | male | Businessperson | | |
Marc Randolph | 1958-04-29 | | United States | male | Businessperson | | |
Akio Morita | 1921-01-26 | Nagoya | Japan | male | Businessperson | 1999-10-03 | Tokyo |
Masaru Ibuka | 1908-04-11 | | Japan | male | Engineer; Businessperson | 1997-12-19 | Tokyo |
Kiichiro Toyoda | 1894-06-11 | | Japan | male | Engineer; Businessperson | 1952-03-27 | |
Henri Nestlé | 1814-08-10 | Frankfurt | Switzerland; Germany | male | Businessperson | 1890-07-07 | |
Fusajiro Yamauchi | 1859-11-22 | Kyoto | Japan | male | Businessperson | 1940-01-31 | |
Lee Byung-chul | 1910-02-12 | | South Korea | male | Businessperson | 1987-11-19 | Seoul |
Martin Eberhard | 1960-01-01 | | United States | male | Engineer; Businessperson | | |
Ingvar Kamprad | 1926-03-30 | | Sweden | male | Businessperson | 2018-01-27 | |
George Washington | 1732-02-22 | | United States | male | Politician; Military officer | 1799-12-14 | | 1.88
Abraham Lincoln | 1809-02-12 | | United States | male | Politician; Lawyer | 1865-04-15 | Washington, D.C. | 1.93
Franklin D. Roosevelt | 1882-01-30 | | United States | male | Politician; Lawyer | 1945-04-12 | | 1.88
John F. Kennedy | 1917-05-29 | | United States | male | Politician | 1963-11-22 | Dallas | 1.83
Bill Clinton | 1946-08-19 | | United States | male | Politician; Lawyer | | | 1.88
George W. Bush | 1946-07-06 | New Haven | United States | male | Politician; Businessperson | | | 1.82
Barack Obama | 1961-08-04 | Honolulu | United States | male | Politician; Lawyer | | | 1.87
Michelle Obama | 1964-01-17 | Chicago | United States | female | Lawyer; Writer | | | 1.80
Donald Trump | 1946-06-14 | New York City | United States | male | Politician; Businessperson | | | 1.90
Joe Biden | 1942-11-20 | Scranton | United States | male | Politician; Lawyer | | | 1.82
Winston Churchill | 1874-11-30 | | United Kingdom | male | Politician; Writer | 1965-01-24 | London | 1.68
Margaret Thatcher | 1925-10-13 | Grantham | United Kingdom | female | Politician; Chemist | 2013-04-08 | London |
Tony Blair | 1953-05-06 | Edinburgh | United Kingdom | male | Politician; Lawyer | | |
Theresa May | 1956-10-01 | | United Kingdom | female | Politician | | |
Boris Johnson | 1964-06-19 | New York City | United Kingdom | male | Politician; Journalist | | |
Liz Truss | 1975-07-26 | Oxford | United Kingdom | female | Politician | | |
Rishi Sunak | 1980-05-12 | Southampton | United Kingdom | male | Politician | | |
Keir Starmer | 1962-09-02 | London | United Kingdom | male | Politician; Lawyer | | |
Helmut Kohl | 1930-04-03 | | Germany | male | Politician | 2017-06-16 | |
Gerhard Schröder | 1944-04-07 | | Germany | male | Politician; Lawyer | | |
Angela Merkel | 1954-07-17 | Hamburg | Germany | female | Politician; Physicist | | |
Olaf Scholz | 1958-06-14 | | Germany | male | Politician; Lawyer | | |
Friedrich Merz | 1955-11-11 | | Germany | male | Politician; Lawyer | | |
Charles de Gaulle | 1890-11-22 | Lille | France | male | Politician; Military officer | 1970-11-09 | | 1.96
François Mitterrand | 1916-10-26 | | France | male | Politician | 1996-01-08 | Paris |
Jacques Chirac | 1932-11-29 | Paris | France | male | Politician | 2019-09-26 | Paris |
Nicolas Sarkozy | 1955-01-28 | Paris | France | male | Politician; Lawyer | | |
François Hollande | 1954-08-12 | | France | male | Politician | | |
Emmanuel Macron | 1977-12-21 | Amiens | France | male | Politician | | | 1.73
Nelson Mandela | 1918-07-18 | | South Africa | male | Politician; Lawyer | 2013-12-05 | Johannesburg |
"""

# person | person | from | to   (empty "to": ongoing)
MARRIAGES = """
Pierre Curie | Marie Curie | 1895-07-26 | 1906-04-19
Tom Hanks | Rita Wilson | 1988-04-30 |
Brad Pitt | Jennifer Aniston | 2000-07-29 | 2005-10-02
Brad Pitt | Angelina Jolie | 2014-08-23 | 2019-04-12
Barack Obama | Michelle Obama | 1992-10-03 |
John Lennon | Cynthia Lennon | 1962-08-23 | 1968-11-08
John Lennon | Yoko Ono | 1969-03-20 | 1980-12-08
Paul McCartney | Linda McCartney | 1969-03-12 | 1998-04-17
Beyoncé | Jay-Z | 2008-04-04 |
Bill Gates | Melinda French Gates | 1994-01-01 | 2021-08-02
Diego Rivera | Frida Kahlo | 1929-08-21 | 1939-11-06
Diego Rivera | Frida Kahlo | 1940-12-08 | 1954-07-13
Pablo Picasso | Olga Khokhlova | 1918-07-12 | 1955-02-11
Pablo Picasso | Jacqueline Roque | 1961-03-02 | 1973-04-08
Elizabeth Taylor | Richard Burton | 1964-03-15 | 1974-06-26
Elizabeth Taylor | Richard Burton | 1975-10-10 | 1976-07-29
"""

# film | directors | release date | genres | countries | language | runtime (min) | budget (USD)
# | cast "actor=character" (;) | writers (;) | based on
FILMS = """
The Godfather | Francis Ford Coppola | 1972-03-24 | Crime; Drama | United States | English | 175 | 6000000 | Marlon Brando=Vito Corleone; Al Pacino=Michael Corleone; James Caan=Sonny Corleone; Diane Keaton=Kay Adams | Mario Puzo; Francis Ford Coppola |
The Godfather Part II | Francis Ford Coppola | 1974-12-20 | Crime; Drama | United States | English | 202 | 13000000 | Al Pacino=Michael Corleone; Robert De Niro=Vito Corleone; Diane Keaton=Kay Adams | Mario Puzo; Francis Ford Coppola |
Apocalypse Now | Francis Ford Coppola | 1979-08-15 | War; Drama | United States | English | 147 | 31500000 | Marlon Brando=Walter E. Kurtz; Martin Sheen=Benjamin L. Willard | Francis Ford Coppola |
Taxi Driver | Martin Scorsese | 1976-02-08 | Crime; Drama | United States | English | 114 | 1900000 | Robert De Niro=Travis Bickle; Jodie Foster=Iris Steensma | |
Goodfellas | Martin Scorsese | 1990-09-19 | Crime; Drama | United States | English | 146 | 25000000 | Robert De Niro=Jimmy Conway; Ray Liotta=Henry Hill; Joe Pesci=Tommy DeVito | Martin Scorsese |
The Departed | Martin Scorsese | 2006-10-06 | Crime; Thriller | United States | English | 151 | 90000000 | Leonardo DiCaprio=Billy Costigan; Matt Damon=Colin Sullivan; Jack Nicholson=Frank Costello | |
The Wolf of Wall Street | Martin Scorsese | 2013-12-25 | Comedy; Crime | United States | English | 180 | 100000000 | Leonardo DiCaprio=Jordan Belfort; Margot Robbie=Naomi Lapaglia | |
Titanic | James Cameron | 1997-12-19 | Romance; Drama | United States | English | 195 | 200000000 | Leonardo DiCaprio=Jack Dawson; Kate Winslet=Rose DeWitt Bukater | James Cameron |
Avatar | James Cameron | 2009-12-18 | Science fiction; Action | United States | English | 162 | 237000000 | Sam Worthington=Jake Sully; Zoe Saldaña=Neytiri; Sigourney Weaver=Grace Augustine | James Cameron |
The Terminator | James Cameron | 1984-10-26 | Science fiction; Action | United States | English | 107 | 6400000 | Arnold Schwarzenegger=The Terminator; Linda Hamilton=Sarah Connor | James Cameron |
Aliens | James Cameron | 1986-07-18 | Science fiction; Action | United States | English | 137 | 18500000 | Sigourney Weaver=Ellen Ripley | James Cameron |
Alien | Ridley Scott | 1979-05-25 | Science fiction; Horror | United States; United Kingdom | English | 117 | 11000000 | Sigourney Weaver=Ellen Ripley | |
Gladiator | Ridley Scott | 2000-05-05 | Historical; Action | United States; United Kingdom | English | 155 | 103000000 | Russell Crowe=Maximus; Joaquin Phoenix=Commodus | |
Blade Runner | Ridley Scott | 1982-06-25 | Science fiction | United States | English | 117 | 28000000 | Harrison Ford=Rick Deckard | |
Jaws | Steven Spielberg | 1975-06-20 | Thriller | United States | English | 124 | 9000000 | Roy Scheider=Martin Brody | |
E.T. the Extra-Terrestrial | Steven Spielberg | 1982-06-11 | Science fiction; Family | United States | English | 115 | 10500000 | Henry Thomas=Elliott | |
Jurassic Park | Steven Spielberg | 1993-06-11 | Science fiction; Adventure | United States | English | 127 | 63000000 | Sam Neill=Alan Grant; Laura Dern=Ellie Sattler; Jeff Goldblum=Ian Malcolm | |
Schindler's List | Steven Spielberg | 1993-12-15 | Historical; Drama | United States | English | 195 | 22000000 | Liam Neeson=Oskar Schindler; Ralph Fiennes=Amon Göth | |
Saving Private Ryan | Steven Spielberg | 1998-07-24 | War; Drama | United States | English | 169 | 70000000 | Tom Hanks=John H. Miller; Matt Damon=James Francis Ryan | |
Raiders of the Lost Ark | Steven Spielberg | 1981-06-12 | Adventure; Action | United States | English | 115 | 18000000 | Harrison Ford=Indiana Jones | George Lucas |
Star Wars | George Lucas | 1977-05-25 | Science fiction; Adventure | United States | English | 121 | 11000000 | Mark Hamill=Luke Skywalker; Harrison Ford=Han Solo; Carrie Fisher=Princess Leia | George Lucas |
Pulp Fiction | Quentin Tarantino | 1994-10-14 | Crime | United States | English | 154 | 8500000 | John Travolta=Vincent Vega; Samuel L. Jackson=Jules Winnfield; Uma Thurman=Mia Wallace | Quentin Tarantino |
Kill Bill: Volume 1 | Quentin Tarantino | 2003-10-10 | Action; Crime | United States | English | 111 | 30000000 | Uma Thurman=The Bride | Quentin Tarantino |
Django Unchained | Quentin Tarantino | 2012-12-25 | Western | United States | English | 165 | 100000000 | Jamie Foxx=Django; Christoph Waltz=King Schultz; Leonardo DiCaprio=Calvin Candie | Quentin Tarantino |
Inglourious Basterds | Quentin Tarantino | 2009-08-21 | War | United States; Germany | English | 153 | 70000000 | Brad Pitt=Aldo Raine; Christoph Waltz=Hans Landa | Quentin Tarantino |
Inception | Christopher Nolan | 2010-07-16 | Science fiction; Thriller | United States; United Kingdom | English | 148 | 160000000 | Leonardo DiCaprio=Dom Cobb; Joseph Gordon-Levitt=Arthur; Elliot Page=Ariadne | Christopher Nolan |
The Dark Knight | Christopher Nolan | 2008-07-18 | Action; Crime | United States; United Kingdom | English | 152 | 185000000 | Christian Bale=Bruce Wayne; Heath Ledger=Joker | Christopher Nolan |
Interstellar | Christopher Nolan | 2014-11-07 | Science fiction | United States; United Kingdom | English | 169 | 165000000 | Matthew McConaughey=Joseph Cooper; Anne Hathaway=Amelia Brand | Christopher Nolan |
Oppenheimer | Christopher Nolan | 2023-07-21 | Biographical; Drama | United States; United Kingdom | English | 180 | 100000000 | Cillian Murphy=J. Robert Oppenheimer; Emily Blunt=Kitty Oppenheimer; Robert Downey Jr.=Lewis Strauss | Christopher Nolan |
Memento | Christopher Nolan | 2000-09-05 | Thriller | United States | English | 113 | 9000000 | Guy Pearce=Leonard Shelby | Christopher Nolan |
Forrest Gump | Robert Zemeckis | 1994-07-06 | Drama; Comedy | United States | English | 142 | 55000000 | Tom Hanks=Forrest Gump; Robin Wright=Jenny Curran | |
Back to the Future | Robert Zemeckis | 1985-07-03 | Science fiction; Comedy | United States | English | 116 | 19000000 | Michael J. Fox=Marty McFly; Christopher Lloyd=Emmett Brown | Robert Zemeckis |
Cast Away | Robert Zemeckis | 2000-12-22 | Drama; Adventure | United States | English | 143 | 90000000 | Tom Hanks=Chuck Noland | |
The Shawshank Redemption | Frank Darabont | 1994-09-23 | Drama | United States | English | 142 | 25000000 | Tim Robbins=Andy Dufresne; Morgan Freeman=Ellis Redding | Frank Darabont |
The Green Mile | Frank Darabont | 1999-12-10 | Drama; Fantasy | United States | English | 189 | 60000000 | Tom Hanks=Paul Edgecomb; Michael Clarke Duncan=John Coffey | Frank Darabont |
Psycho | Alfred Hitchcock | 1960-06-16 | Horror; Thriller | United States | English | 109 | 806947 | Anthony Perkins=Norman Bates; Janet Leigh=Marion Crane | |
Vertigo | Alfred Hitchcock | 1958-05-09 | Thriller | United States | English | 128 | 2479000 | James Stewart=John Ferguson; Kim Novak=Madeleine Elster | |
Rear Window | Alfred Hitchcock | 1954-08-01 | Thriller | United States | English | 112 | 1000000 | James Stewart=L. B. Jefferies; Grace Kelly=Lisa Fremont | |
Spirited Away | Hayao Miyazaki | 2001-07-20 | Animation; Fantasy | Japan | Japanese | 125 | 19000000 | Rumi Hiiragi=Chihiro Ogino | Hayao Miyazaki |
My Neighbor Totoro | Hayao Miyazaki | 1988-04-16 | Animation; Family | Japan | Japanese | 86 | | | Hayao Miyazaki |
Princess Mononoke | Hayao Miyazaki | 1997-07-12 | Animation; Fantasy | Japan | Japanese | 134 | 23500000 | | Hayao Miyazaki |
Seven Samurai | Akira Kurosawa | 1954-04-26 | Action; Drama | Japan | Japanese | 207 | | Toshiro Mifune=Kikuchiyo; Takashi Shimura=Kambei Shimada | Akira Kurosawa |
Rashomon | Akira Kurosawa | 1950-08-25 | Drama; Crime | Japan | Japanese | 88 | | Toshiro Mifune=Tajōmaru; Takashi Shimura=The Woodcutter | Akira Kurosawa |
Parasite | Bong Joon-ho | 2019-05-30 | Thriller; Comedy | South Korea | Korean | 132 | 11400000 | Song Kang-ho=Kim Ki-taek | Bong Joon-ho |
Amélie | Jean-Pierre Jeunet | 2001-04-25 | Romance; Comedy | France | French | 122 | 10000000 | Audrey Tautou=Amélie Poulain | Jean-Pierre Jeunet |
Life Is Beautiful | Roberto Benigni | 1997-12-20 | Comedy; Drama | Italy | Italian | 116 | 20000000 | Roberto Benigni=Guido Orefice | Roberto Benigni |
Cinema Paradiso | Giuseppe Tornatore | 1988-11-17 | Drama | Italy | Italian | 155 | | Philippe Noiret=Alfredo | Giuseppe Tornatore |
Pan's Labyrinth | Guillermo del Toro | 2006-10-11 | Fantasy; War | Mexico; Spain | Spanish | 118 | 19000000 | Ivana Baquero=Ofelia | Guillermo del Toro |
The Shape of Water | Guillermo del Toro | 2017-12-01 | Fantasy; Romance | United States | English | 123 | 19500000 | Sally Hawkins=Elisa Esposito | Guillermo del Toro |
City of God | Fernando Meirelles | 2002-08-30 | Crime; Drama | Brazil | Portuguese | 130 | 3300000 | Alexandre Rodrigues=Rocket | |
The Lord of the Rings: The Fellowship of the Ring | Peter Jackson | 2001-12-19 | Fantasy; Adventure | New Zealand; United States | English | 178 | 93000000 | Elijah Wood=Frodo Baggins; Ian McKellen=Gandalf; Viggo Mortensen=Aragorn | Peter Jackson | The Lord of the Rings
The Lord of the Rings: The Return of the King | Peter Jackson | 2003-12-17 | Fantasy; Adventure | New Zealand; United States | English | 201 | 94000000 | Elijah Wood=Frodo Baggins; Ian McKellen=Gandalf; Viggo Mortensen=Aragorn | Peter Jackson | The Lord of the Rings
Harry Potter and the Philosopher's Stone | Chris Columbus | 2001-11-16 | Fantasy; Family | United Kingdom; United States | English | 152 | 125000000 | Daniel Radcliffe=Harry Potter; Emma Watson=Hermione Granger; Rupert Grint=Ron Weasley | | Harry Potter and the Philosopher's Stone
Home Alone | Chris Columbus | 1990-11-16 | Comedy; Family | United States | English | 103 | 18000000 | Macaulay Culkin=Kevin McCallister | |
Barbie | Greta Gerwig | 2023-07-21 | Comedy; Fantasy | United States | English | 114 | 145000000 | Margot Robbie=Barbie; Ryan Gosling=Ken | Greta Gerwig |
Lady Bird | Greta Gerwig | 2017-11-03 | Comedy; Drama | United States | English | 94 | 10000000 | Saoirse Ronan=Christine McPherson | Greta Gerwig |
Little Women | Greta Gerwig | 2019-12-25 | Drama | United States | English | 135 | 40000000 | Saoirse Ronan=Jo March; Emma Watson=Meg March; Florence Pugh=Amy March | Greta Gerwig |
Get Out | Jordan Peele | 2017-02-24 | Horror; Thriller | United States | English | 104 | 4500000 | Daniel Kaluuya=Chris Washington | Jordan Peele |
Mad Max: Fury Road | George Miller | 2015-05-15 | Action; Adventure | Australia; United States | English | 120 | 150000000 | Tom Hardy=Max Rockatansky; Charlize Theron=Imperator Furiosa | George Miller |
Romeo + Juliet | Baz Luhrmann | 1996-11-01 | Romance; Drama | United States | English | 120 | 14500000 | Leonardo DiCaprio=Romeo; Claire Danes=Juliet | Baz Luhrmann | Romeo and Juliet
Cleopatra | Joseph L. Mankiewicz | 1963-06-12 | Historical; Drama | United States | English | 192 | 31100000 | Elizabeth Taylor=Cleopatra; Richard Burton=Mark Antony | |
"""

# book | authors | year of first publication | genres | original language
BOOKS = """
Hamlet | William Shakespeare | 1603 | Tragedy | English
Romeo and Juliet | William Shakespeare | 1597 | Tragedy | English
Macbeth | William Shakespeare | 1623 | Tragedy | English
Pride and Prejudice | Jane Austen | 1813 | Romance novel | English
Emma | Jane Austen | 1815 | Romance novel | English
Oliver Twist | Charles Dickens | 1838 | Social novel | English
A Tale of Two Cities | Charles Dickens | 1859 | Historical novel | English
Great Expectations | Charles Dickens | 1861 | Social novel | English
Adventures of Huckleberry Finn | Mark Twain | 1884 | Adventure novel | English
The Adventures of Tom Sawyer | Mark Twain | 1876 | Adventure novel | English
War and Peace | Leo Tolstoy | 1869 | Historical novel | Russian
Anna Karenina | Leo Tolstoy | 1878 | Romance novel | Russian
Crime and Punishment | Fyodor Dostoevsky | 1866 | Philosophical novel | Russian
The Brothers Karamazov | Fyodor Dostoevsky | 1880 | Philosophical novel | Russian
One Hundred Years of Solitude | Gabriel García Márquez | 1967 | Magical realism | Spanish
Love in the Time of Cholera | Gabriel García Márquez | 1985 | Romance novel | Spanish
Nineteen Eighty-Four | George Orwell | 1949 | Dystopian fiction | English
Animal Farm | George Orwell | 1945 | Political satire | English
Harry Potter and the Philosopher's Stone | J. K. Rowling | 1997 | Fantasy | English
Harry Potter and the Deathly Hallows | J. K. Rowling | 2007 | Fantasy | English
Norwegian Wood | Haruki Murakami | 1987 | Romance novel | Japanese
Kafka on the Shore | Haruki Murakami | 2002 | Magical realism | Japanese
The Old Man and the Sea | Ernest Hemingway | 1952 | Literary fiction | English
A Farewell to Arms | Ernest Hemingway | 1929 | War novel | English
Mrs Dalloway | Virginia Woolf | 1925 | Modernist novel | English
Don Quixote | Miguel de Cervantes | 1605 | Satire | Spanish
Les Misérables | Victor Hugo | 1862 | Historical novel | French
The Hunchback of Notre-Dame | Victor Hugo | 1831 | Historical novel | French
Beloved | Toni Morrison | 1987 | Historical novel | English
Things Fall Apart | Chinua Achebe | 1958 | Historical novel | English
The Hobbit | J. R. R. Tolkien | 1937 | Fantasy | English
The Lord of the Rings | J. R. R. Tolkien | 1954 | Fantasy | English
Murder on the Orient Express | Agatha Christie | 1934 | Detective fiction | English
The Alchemist | Paulo Coelho | 1988 | Fantasy | Portuguese
On the Origin of Species | Charles Darwin | 1859 | Non-fiction | English
A Brief History of Time | Stephen Hawking | 1988 | Non-fiction | English
Relativity: The Special and the General Theory | Albert Einstein | 1916 | Non-fiction | German
The Godfather (novel) | Mario Puzo | 1969 | Crime fiction | English
"""

# artist | kind (person|group) | origin city | genres | record label | formed year (groups)
ARTISTS = """
The Beatles | group | Liverpool | Rock; Pop | Parlophone | 1960
Queen | group | London | Rock | EMI | 1970
ABBA | group | Stockholm | Pop | Polar Music | 1972
Michael Jackson | person | | Pop | Epic Records |
Madonna | person | | Pop | Sire Records |
Beyoncé | person | Houston | R&B; Pop | Columbia Records |
Jay-Z | person | New York City | Hip hop | Roc-A-Fella Records |
Taylor Swift | person | | Country; Pop | Big Machine Records |
Adele | person | London | Soul; Pop | XL Recordings |
David Bowie | person | London | Rock | RCA Records |
Elvis Presley | person | Memphis | Rock and roll | RCA Records |
Shakira | person | Barranquilla | Pop; Latin pop | Epic Records |
Wolfgang Amadeus Mozart | person | Salzburg | Classical music | |
Ludwig van Beethoven | person | Bonn | Classical music | |
"""

# group | member | from year | to year
MEMBERSHIPS = """
The Beatles | John Lennon | 1960 | 1970
The Beatles | Paul McCartney | 1960 | 1970
The Beatles | George Harrison | 1960 | 1970
The Beatles | Ringo Starr | 1962 | 1970
Queen | Freddie Mercury | 1970 | 1991
Queen | Brian May | 1970 |
ABBA | Agnetha Fältskog | 1972 | 1982
ABBA | Björn Ulvaeus | 1972 | 1982
ABBA | Benny Andersson | 1972 | 1982
ABBA | Anni-Frid Lyngstad | 1972 | 1982
"""

# album | artist | release date
ALBUMS = """
Please Please Me | The Beatles | 1963-03-22
A Hard Day's Night | The Beatles | 1964-07-10
Help! | The Beatles | 1965-08-06
Rubber Soul | The Beatles | 1965-12-03
Revolver | The Beatles | 1966-08-05
Sgt. Pepper's Lonely Hearts Club Band | The Beatles | 1967-05-26
Abbey Road | The Beatles | 1969-09-26
Let It Be | The Beatles | 1970-05-08
A Night at the Opera | Queen | 1975-11-21
News of the World | Queen | 1977-10-28
The Game | Queen | 1980-06-30
Waterloo | ABBA | 1974-03-04
Arrival | ABBA | 1976-10-11
Off the Wall | Michael Jackson | 1979-08-10
Thriller | Michael Jackson | 1982-11-30
Bad | Michael Jackson | 1987-08-31
Like a Virgin | Madonna | 1984-11-12
Ray of Light | Madonna | 1998-02-22
Dangerously in Love | Beyoncé | 2003-06-20
Lemonade | Beyoncé | 2016-04-23
Reasonable Doubt | Jay-Z | 1996-06-25
The Blueprint | Jay-Z | 2001-09-11
Fearless | Taylor Swift | 2008-11-11
1989 | Taylor Swift | 2014-10-27
Folklore | Taylor Swift | 2020-07-24
21 | Adele | 2011-01-24
25 | Adele | 2015-11-20
The Rise and Fall of Ziggy Stardust | David Bowie | 1972-06-16
Heroes | David Bowie | 1977-10-14
Blackstar | David Bowie | 2016-01-08
Elvis Presley | Elvis Presley | 1956-03-23
Blue Hawaii | Elvis Presley | 1961-10-01
Laundry Service | Shakira | 2001-11-13
"""

# team | sport | city | league | founded | stadium | capacity
TEAMS = """
FC Barcelona | Association football | Barcelona | La Liga | 1899 | Camp Nou | 99354
Real Madrid CF | Association football | Madrid | La Liga | 1902 | Santiago Bernabéu Stadium | 81044
Manchester United F.C. | Association football | Manchester | Premier League | 1878 | Old Trafford | 74310
Liverpool F.C. | Association football | Liverpool | Premier League | 1892 | Anfield | 61276
FC Bayern Munich | Association football | Munich | Bundesliga | 1900 | Allianz Arena | 75024
Juventus FC | Association football | Turin | Serie A | 1897 | Allianz Stadium | 41507
A.C. Milan | Association football | Milan | Serie A | 1899 | San Siro | 75817
Paris Saint-Germain F.C. | Association football | Paris | Ligue 1 | 1970 | Parc des Princes | 47929
Inter Miami CF | Association football | Miami | Major League Soccer | 2018 | Chase Stadium | 21550
Los Angeles Lakers | Basketball | Los Angeles | National Basketball Association | 1947 | Crypto.com Arena | 19068
Boston Celtics | Basketball | Boston | National Basketball Association | 1946 | TD Garden | 19156
Chicago Bulls | Basketball | Chicago | National Basketball Association | 1966 | United Center | 20917
Golden State Warriors | Basketball | San Francisco | National Basketball Association | 1946 | Chase Center | 18064
Cleveland Cavaliers | Basketball | Cleveland | National Basketball Association | 1970 | Rocket Arena | 19432
Miami Heat | Basketball | Miami | National Basketball Association | 1988 | Kaseya Center | 19600
Washington Wizards | Basketball | Washington, D.C. | National Basketball Association | 1961 | Capital One Arena | 20356
New York Yankees | Baseball | New York City | Major League Baseball | 1901 | Yankee Stadium | 46537
San Francisco Giants | Baseball | San Francisco | Major League Baseball | 1883 | Oracle Park | 41915
Boston Red Sox | Baseball | Boston | Major League Baseball | 1901 | Fenway Park | 37755
Chicago Cubs | Baseball | Chicago | Major League Baseball | 1876 | Wrigley Field | 41649
New England Patriots | American football | Foxborough | National Football League | 1959 | Gillette Stadium | 65878
Tampa Bay Buccaneers | American football | Tampa | National Football League | 1976 | Raymond James Stadium | 65618
Toronto Maple Leafs | Ice hockey | Toronto | National Hockey League | 1917 | Scotiabank Arena | 18800
Montreal Canadiens | Ice hockey | Montreal | National Hockey League | 1909 | Bell Centre | 21105
"""

# championship event | champion team | year | kind
CHAMPIONSHIPS = """
2000 World Series | New York Yankees | 2000 | World Series
2004 World Series | Boston Red Sox | 2004 | World Series
2007 World Series | Boston Red Sox | 2007 | World Series
2009 World Series | New York Yankees | 2009 | World Series
2010 World Series | San Francisco Giants | 2010 | World Series
2012 World Series | San Francisco Giants | 2012 | World Series
2013 World Series | Boston Red Sox | 2013 | World Series
2014 World Series | San Francisco Giants | 2014 | World Series
2016 World Series | Chicago Cubs | 2016 | World Series
2018 World Series | Boston Red Sox | 2018 | World Series
1998 NBA Finals | Chicago Bulls | 1998 | NBA Finals
2008 NBA Finals | Boston Celtics | 2008 | NBA Finals
2009 NBA Finals | Los Angeles Lakers | 2009 | NBA Finals
2010 NBA Finals | Los Angeles Lakers | 2010 | NBA Finals
2015 NBA Finals | Golden State Warriors | 2015 | NBA Finals
2016 NBA Finals | Cleveland Cavaliers | 2016 | NBA Finals
2017 NBA Finals | Golden State Warriors | 2017 | NBA Finals
2018 NBA Finals | Golden State Warriors | 2018 | NBA Finals
2020 NBA Finals | Los Angeles Lakers | 2020 | NBA Finals
2022 NBA Finals | Golden State Warriors | 2022 | NBA Finals
2024 NBA Finals | Boston Celtics | 2024 | NBA Finals
2007 UEFA Champions League Final | A.C. Milan | 2007 | UEFA Champions League Final
2008 UEFA Champions League Final | Manchester United F.C. | 2008 | UEFA Champions League Final
2009 UEFA Champions League Final | FC Barcelona | 2009 | UEFA Champions League Final
2011 UEFA Champions League Final | FC Barcelona | 2011 | UEFA Champions League Final
2013 UEFA Champions League Final | FC Bayern Munich | 2013 | UEFA Champions League Final
2014 UEFA Champions League Final | Real Madrid CF | 2014 | UEFA Champions League Final
2015 UEFA Champions League Final | FC Barcelona | 2015 | UEFA Champions League Final
2016 UEFA Champions League Final | Real Madrid CF | 2016 | UEFA Champions League Final
2017 UEFA Champions League Final | Real Madrid CF | 2017 | UEFA Champions League Final
2018 UEFA Champions League Final | Real Madrid CF | 2018 | UEFA Champions League Final
2019 UEFA Champions League Final | Liverpool F.C. | 2019 | UEFA Champions League Final
2020 UEFA Champions League Final | FC Bayern Munich | 2020 | UEFA Champions League Final
2022 UEFA Champions League Final | Real Madrid CF | 2022 | UEFA Champions League Final
Super Bowl XXXVI | New England Patriots | 2002 | Super Bowl
Super Bowl XXXVIII | New England Patriots | 2004 | Super Bowl
Super Bowl XXXIX | New England Patriots | 2005 | Super Bowl
Super Bowl XLIX | New England Patriots | 2015 | Super Bowl
Super Bowl LI | New England Patriots | 2017 | Super Bowl
Super Bowl LIII | New England Patriots | 2019 | Super Bowl
Super Bowl LV | Tampa Bay Buccaneers | 2021 | Super Bowl
1967 Stanley Cup Finals | Toronto Maple Leafs | 1967 | Stanley Cup Finals
1993 Stanley Cup Finals | Montreal Canadiens | 1993 | Stanley Cup Finals
"""

# player | team | from year | to year
ROSTERS = """
Lionel Messi | FC Barcelona | 2004 | 2021
Lionel Messi | Paris Saint-Germain F.C. | 2021 | 2023
Lionel Messi | Inter Miami CF | 2023 |
Cristiano Ronaldo | Manchester United F.C. | 2003 | 2009
Cristiano Ronaldo | Real Madrid CF | 2009 | 2018
Cristiano Ronaldo | Juventus FC | 2018 | 2021
Cristiano Ronaldo | Manchester United F.C. | 2021 | 2022
Zinedine Zidane | Juventus FC | 1996 | 2001
Zinedine Zidane | Real Madrid CF | 2001 | 2006
Mohamed Salah | Liverpool F.C. | 2017 |
Michael Jordan | Chicago Bulls | 1984 | 1993
Michael Jordan | Chicago Bulls | 1995 | 1998
Michael Jordan | Washington Wizards | 2001 | 2003
LeBron James | Cleveland Cavaliers | 2003 | 2010
LeBron James | Miami Heat | 2010 | 2014
LeBron James | Cleveland Cavaliers | 2014 | 2018
LeBron James | Los Angeles Lakers | 2018 |
Kobe Bryant | Los Angeles Lakers | 1996 | 2016
Stephen Curry | Golden State Warriors | 2009 |
Tom Brady | New England Patriots | 2000 | 2019
Tom Brady | Tampa Bay Buccaneers | 2020 | 2022
Derek Jeter | New York Yankees | 1995 | 2014
Babe Ruth | Boston Red Sox | 1914 | 1919
Babe Ruth | New York Yankees | 1920 | 1934
"""

# company | founded (date) | founders | headquarters city | industry | employees
COMPANIES = """
Apple Inc. | 1976-04-01 | Steve Jobs; Steve Wozniak | Cupertino | Consumer electronics | 161000
Microsoft | 1975-04-04 | Bill Gates; Paul Allen | Redmond | Software | 221000
Google | 1998-09-04 | Larry Page; Sergey Brin | Mountain View | Internet | 182502
Amazon | 1994-07-05 | Jeff Bezos | Seattle | E-commerce | 1525000
Meta Platforms | 2004-02-04 | Mark Zuckerberg | Menlo Park | Internet | 67317
Tesla, Inc. | 2003-07-01 | Martin Eberhard; Elon Musk | Austin | Automotive | 140473
SpaceX | 2002-03-14 | Elon Musk | Hawthorne | Aerospace | 13000
Netflix | 1997-08-29 | Reed Hastings; Marc Randolph | Los Gatos | Entertainment | 13000
The Walt Disney Company | 1923-10-16 | Walt Disney; Roy O. Disney | Burbank | Entertainment | 225000
Toyota | 1937-08-28 | Kiichiro Toyoda | Toyota City | Automotive | 375235
Sony | 1946-05-07 | Masaru Ibuka; Akio Morita | Tokyo | Consumer electronics | 113000
Nintendo | 1889-09-23 | Fusajiro Yamauchi | Kyoto | Video games | 7317
Samsung Electronics | 1969-01-13 | Lee Byung-chul | Suwon | Consumer electronics | 267937
Volkswagen | 1937-05-28 | | Wolfsburg | Automotive | 684025
Nestlé | 1866-01-01 | Henri Nestlé | Vevey | Food processing | 270000
IKEA | 1943-07-28 | Ingvar Kamprad | | Retail | 219000
"""

# company | person | role | from | to
LEADERSHIP = """
Apple Inc. | Steve Jobs | Chief executive officer | 1997-09-16 | 2011-08-24
Apple Inc. | Tim Cook | Chief executive officer | 2011-08-24 |
Microsoft | Bill Gates | Chief executive officer | 1975-04-04 | 2000-01-13
Microsoft | Steve Ballmer | Chief executive officer | 2000-01-13 | 2014-02-04
Microsoft | Satya Nadella | Chief executive officer | 2014-02-04 |
Google | Larry Page | Chief executive officer | 1998-09-04 | 2001-08-01
Google | Eric Schmidt | Chief executive officer | 2001-08-01 | 2011-04-04
Google | Larry Page | Chief executive officer | 2011-04-04 | 2015-10-02
Google | Sundar Pichai | Chief executive officer | 2015-10-02 |
Amazon | Jeff Bezos | Chief executive officer | 1994-07-05 | 2021-07-05
Amazon | Andy Jassy | Chief executive officer | 2021-07-05 |
Tesla, Inc. | Martin Eberhard | Chief executive officer | 2004-02-01 | 2007-08-01
Tesla, Inc. | Elon Musk | Chief executive officer | 2008-10-01 |
SpaceX | Elon Musk | Chief executive officer | 2002-03-14 |
Meta Platforms | Mark Zuckerberg | Chief executive officer | 2004-07-01 |
Netflix | Reed Hastings | Chief executive officer | 1998-01-01 | 2023-01-19
The Walt Disney Company | Walt Disney | Chief executive officer | 1923-10-16 | 1966-12-15
"""

# university | founded year | city
UNIVERSITIES = """
Harvard University | 1636 | Cambridge, Massachusetts
Massachusetts Institute of Technology | 1861 | Cambridge, Massachusetts
Stanford University | 1885 | Stanford
University of Oxford | 1096 | Oxford
University of Cambridge | 1209 | Cambridge
ETH Zurich | 1855 | Zürich
University of Tokyo | 1877 | Tokyo
Columbia University | 1754 | New York City
Princeton University | 1746 | Princeton
University of California, Berkeley | 1868 | Berkeley
Yale University | 1701 | New Haven
"""

# person | university | from year | to year
EDUCATION = """
Barack Obama | Columbia University | 1981 | 1983
Barack Obama | Harvard University | 1988 | 1991
Michelle Obama | Princeton University | 1981 | 1985
Michelle Obama | Harvard University | 1985 | 1988
Bill Gates | Harvard University | 1973 | 1975
Steve Ballmer | Harvard University | 1973 | 1977
Mark Zuckerberg | Harvard University | 2002 | 2004
Larry Page | Stanford University | 1995 | 1998
Sergey Brin | Stanford University | 1993 | 1995
Sundar Pichai | Stanford University | 1993 | 1995
Reed Hastings | Stanford University | 1986 | 1988
Jeff Bezos | Princeton University | 1982 | 1986
Albert Einstein | ETH Zurich | 1896 | 1900
Stephen Hawking | University of Oxford | 1959 | 1962
Stephen Hawking | University of Cambridge | 1962 | 1966
Alan Turing | University of Cambridge | 1931 | 1934
Alan Turing | Princeton University | 1936 | 1938
Charles Darwin | University of Cambridge | 1828 | 1831
Isaac Newton | University of Cambridge | 1661 | 1665
J. R. R. Tolkien | University of Oxford | 1911 | 1915
George W. Bush | Yale University | 1964 | 1968
George W. Bush | Harvard University | 1973 | 1975
Bill Clinton | Yale University | 1970 | 1973
John F. Kennedy | Harvard University | 1936 | 1940
Franklin D. Roosevelt | Harvard University | 1900 | 1903
Franklin D. Roosevelt | Columbia University | 1904 | 1907
Margaret Thatcher | University of Oxford | 1943 | 1947
Tony Blair | University of Oxford | 1972 | 1975
Theresa May | University of Oxford | 1974 | 1977
Boris Johnson | University of Oxford | 1983 | 1987
Liz Truss | University of Oxford | 1993 | 1996
Rishi Sunak | University of Oxford | 1998 | 2001
Rishi Sunak | Stanford University | 2004 | 2006
Keir Starmer | University of Oxford | 1985 | 1986
Emma Watson | University of Oxford | 2011 | 2012
"""

# office | jurisdiction | holder | from | to | party
POSITIONS = """
President of the United States | United States | George Washington | 1789-04-30 | 1797-03-04 | Independent
President of the United States | United States | Abraham Lincoln | 1861-03-04 | 1865-04-15 | Republican Party
President of the United States | United States | Franklin D. Roosevelt | 1933-03-04 | 1945-04-12 | Democratic Party
President of the United States | United States | John F. Kennedy | 1961-01-20 | 1963-11-22 | Democratic Party
President of the United States | United States | Ronald Reagan | 1981-01-20 | 1989-01-20 | Republican Party
President of the United States | United States | Bill Clinton | 1993-01-20 | 2001-01-20 | Democratic Party
President of the United States | United States | George W. Bush | 2001-01-20 | 2009-01-20 | Republican Party
President of the United States | United States | Barack Obama | 2009-01-20 | 2017-01-20 | Democratic Party
President of the United States | United States | Donald Trump | 2017-01-20 | 2021-01-20 | Republican Party
President of the United States | United States | Joe Biden | 2021-01-20 | 2025-01-20 | Democratic Party
President of the United States | United States | Donald Trump | 2025-01-20 | | Republican Party
Prime Minister of the United Kingdom | United Kingdom | Winston Churchill | 1940-05-10 | 1945-07-26 | Conservative Party
Prime Minister of the United Kingdom | United Kingdom | Winston Churchill | 1951-10-26 | 1955-04-05 | Conservative Party
Prime Minister of the United Kingdom | United Kingdom | Margaret Thatcher | 1979-05-04 | 1990-11-28 | Conservative Party
Prime Minister of the United Kingdom | United Kingdom | Tony Blair | 1997-05-02 | 2007-06-27 | Labour Party
Prime Minister of the United Kingdom | United Kingdom | Theresa May | 2016-07-13 | 2019-07-24 | Conservative Party
Prime Minister of the United Kingdom | United Kingdom | Boris Johnson | 2019-07-24 | 2022-09-06 | Conservative Party
Prime Minister of the United Kingdom | United Kingdom | Liz Truss | 2022-09-06 | 2022-10-25 | Conservative Party
Prime Minister of the United Kingdom | United Kingdom | Rishi Sunak | 2022-10-25 | 2024-07-05 | Conservative Party
Prime Minister of the United Kingdom | United Kingdom | Keir Starmer | 2024-07-05 | | Labour Party
Chancellor of Germany | Germany | Helmut Kohl | 1982-10-01 | 1998-10-27 | Christian Democratic Union
Chancellor of Germany | Germany | Gerhard Schröder | 1998-10-27 | 2005-11-22 | Social Democratic Party of Germany
Chancellor of Germany | Germany | Angela Merkel | 2005-11-22 | 2021-12-08 | Christian Democratic Union
Chancellor of Germany | Germany | Olaf Scholz | 2021-12-08 | 2025-05-06 | Social Democratic Party of Germany
Chancellor of Germany | Germany | Friedrich Merz | 2025-05-06 | | Christian Democratic Union
President of France | France | Charles de Gaulle | 1959-01-08 | 1969-04-28 | Union for the New Republic
President of France | France | François Mitterrand | 1981-05-21 | 1995-05-17 | Socialist Party
President of France | France | Jacques Chirac | 1995-05-17 | 2007-05-16 | Rally for the Republic
President of France | France | Nicolas Sarkozy | 2007-05-16 | 2012-05-15 | Union for a Popular Movement
President of France | France | François Hollande | 2012-05-15 | 2017-05-14 | Socialist Party
President of France | France | Emmanuel Macron | 2017-05-14 | | Renaissance
Governor of California | California | Ronald Reagan | 1967-01-02 | 1975-01-06 | Republican Party
Governor of California | California | Arnold Schwarzenegger | 2003-11-17 | 2011-01-03 | Republican Party
President of South Africa | South Africa | Nelson Mandela | 1994-05-10 | 1999-06-14 | African National Congress
"""

# award | presenting organisation | winner | year | honored for
AWARDS = """
Academy Award for Best Director | Academy of Motion Picture Arts and Sciences | Francis Ford Coppola | 1975 | The Godfather Part II
Academy Award for Best Director | Academy of Motion Picture Arts and Sciences | Steven Spielberg | 1994 | Schindler's List
Academy Award for Best Director | Academy of Motion Picture Arts and Sciences | Robert Zemeckis | 1995 | Forrest Gump
Academy Award for Best Director | Academy of Motion Picture Arts and Sciences | James Cameron | 1998 | Titanic
Academy Award for Best Director | Academy of Motion Picture Arts and Sciences | Steven Spielberg | 1999 | Saving Private Ryan
Academy Award for Best Director | Academy of Motion Picture Arts and Sciences | Peter Jackson | 2004 | The Lord of the Rings: The Return of the King
Academy Award for Best Director | Academy of Motion Picture Arts and Sciences | Martin Scorsese | 2007 | The Departed
Academy Award for Best Director | Academy of Motion Picture Arts and Sciences | Guillermo del Toro | 2018 | The Shape of Water
Academy Award for Best Director | Academy of Motion Picture Arts and Sciences | Bong Joon-ho | 2020 | Parasite
Academy Award for Best Director | Academy of Motion Picture Arts and Sciences | Christopher Nolan | 2024 | Oppenheimer
Academy Award for Best Picture | Academy of Motion Picture Arts and Sciences | The Godfather | 1973 | The Godfather
Academy Award for Best Picture | Academy of Motion Picture Arts and Sciences | The Godfather Part II | 1975 | The Godfather Part II
Academy Award for Best Picture | Academy of Motion Picture Arts and Sciences | Schindler's List | 1994 | Schindler's List
Academy Award for Best Picture | Academy of Motion Picture Arts and Sciences | Forrest Gump | 1995 | Forrest Gump
Academy Award for Best Picture | Academy of Motion Picture Arts and Sciences | Titanic | 1998 | Titanic
Academy Award for Best Picture | Academy of Motion Picture Arts and Sciences | Gladiator | 2001 | Gladiator
Academy Award for Best Picture | Academy of Motion Picture Arts and Sciences | The Lord of the Rings: The Return of the King | 2004 | The Lord of the Rings: The Return of the King
Academy Award for Best Picture | Academy of Motion Picture Arts and Sciences | The Departed | 2007 | The Departed
Academy Award for Best Picture | Academy of Motion Picture Arts and Sciences | The Shape of Water | 2018 | The Shape of Water
Academy Award for Best Picture | Academy of Motion Picture Arts and Sciences | Parasite | 2020 | Parasite
Academy Award for Best Picture | Academy of Motion Picture Arts and Sciences | Oppenheimer | 2024 | Oppenheimer
Academy Award for Best Actor | Academy of Motion Picture Arts and Sciences | Marlon Brando | 1973 | The Godfather
Academy Award for Best Actor | Academy of Motion Picture Arts and Sciences | Tom Hanks | 1994 |
Academy Award for Best Actor | Academy of Motion Picture Arts and Sciences | Tom Hanks | 1995 | Forrest Gump
Academy Award for Best Actor | Academy of Motion Picture Arts and Sciences | Russell Crowe | 2001 | Gladiator
Academy Award for Best Actor | Academy of Motion Picture Arts and Sciences | Leonardo DiCaprio | 2016 |
Academy Award for Best Actor | Academy of Motion Picture Arts and Sciences | Joaquin Phoenix | 2020 |
Academy Award for Best Actor | Academy of Motion Picture Arts and Sciences | Cillian Murphy | 2024 | Oppenheimer
Academy Award for Best Actress | Academy of Motion Picture Arts and Sciences | Grace Kelly | 1955 |
Academy Award for Best Actress | Academy of Motion Picture Arts and Sciences | Diane Keaton | 1978 |
Academy Award for Best Actress | Academy of Motion Picture Arts and Sciences | Jodie Foster | 1989 |
Academy Award for Best Actress | Academy of Motion Picture Arts and Sciences | Jodie Foster | 1992 |
Academy Award for Best Actress | Academy of Motion Picture Arts and Sciences | Charlize Theron | 2004 |
Academy Award for Best Actress | Academy of Motion Picture Arts and Sciences | Kate Winslet | 2009 |
Academy Award for Best Supporting Actor | Academy of Motion Picture Arts and Sciences | Robert De Niro | 1975 | The Godfather Part II
Academy Award for Best Supporting Actor | Academy of Motion Picture Arts and Sciences | Joe Pesci | 1991 | Goodfellas
Academy Award for Best Supporting Actor | Academy of Motion Picture Arts and Sciences | Heath Ledger | 2009 | The Dark Knight
Academy Award for Best Supporting Actor | Academy of Motion Picture Arts and Sciences | Christoph Waltz | 2010 | Inglourious Basterds
Academy Award for Best Supporting Actor | Academy of Motion Picture Arts and Sciences | Christoph Waltz | 2013 | Django Unchained
Academy Award for Best Supporting Actor | Academy of Motion Picture Arts and Sciences | Robert Downey Jr. | 2024 | Oppenheimer
Nobel Prize in Physics | Royal Swedish Academy of Sciences | Marie Curie | 1903 |
Nobel Prize in Physics | Royal Swedish Academy of Sciences | Pierre Curie | 1903 |
Nobel Prize in Physics | Royal Swedish Academy of Sciences | Albert Einstein | 1921 |
Nobel Prize in Chemistry | Royal Swedish Academy of Sciences | Marie Curie | 1911 |
Nobel Prize in Literature | Swedish Academy | Ernest Hemingway | 1954 | The Old Man and the Sea
Nobel Prize in Literature | Swedish Academy | Gabriel García Márquez | 1982 |
Nobel Prize in Literature | Swedish Academy | Toni Morrison | 1993 |
Nobel Peace Prize | Norwegian Nobel Committee | Nelson Mandela | 1993 |
Nobel Peace Prize | Norwegian Nobel Committee | Barack Obama | 2009 |
Grammy Award for Album of the Year | Recording Academy | The Beatles | 1968 | Sgt. Pepper's Lonely Hearts Club Band
Grammy Award for Album of the Year | Recording Academy | Michael Jackson | 1984 | Thriller
Grammy Award for Album of the Year | Recording Academy | Taylor Swift | 2010 | Fearless
Grammy Award for Album of the Year | Recording Academy | Adele | 2012 | 21
Grammy Award for Album of the Year | Recording Academy | Taylor Swift | 2016 | 1989
Grammy Award for Album of the Year | Recording Academy | Adele | 2017 | 25
Grammy Award for Album of the Year | Recording Academy | Taylor Swift | 2021 | Folklore
Ballon d'Or | France Football | Zinedine Zidane | 1998 |
Ballon d'Or | France Football | Cristiano Ronaldo | 2008 |
Ballon d'Or | France Football | Lionel Messi | 2009 |
Ballon d'Or | France Football | Lionel Messi | 2010 |
Ballon d'Or | France Football | Lionel Messi | 2011 |
Ballon d'Or | France Football | Lionel Messi | 2012 |
Ballon d'Or | France Football | Cristiano Ronaldo | 2013 |
Ballon d'Or | France Football | Cristiano Ronaldo | 2014 |
Ballon d'Or | France Football | Lionel Messi | 2015 |
Ballon d'Or | France Football | Cristiano Ronaldo | 2016 |
Ballon d'Or | France Football | Cristiano Ronaldo | 2017 |
Ballon d'Or | France Football | Lionel Messi | 2019 |
Ballon d'Or | France Football | Lionel Messi | 2021 |
Ballon d'Or | France Football | Lionel Messi | 2023 |
NBA Most Valuable Player Award | National Basketball Association | Michael Jordan | 1988 |
NBA Most Valuable Player Award | National Basketball Association | Michael Jordan | 1991 |
NBA Most Valuable Player Award | National Basketball Association | Michael Jordan | 1992 |
NBA Most Valuable Player Award | National Basketball Association | Michael Jordan | 1996 |
NBA Most Valuable Player Award | National Basketball Association | Michael Jordan | 1998 |
NBA Most Valuable Player Award | National Basketball Association | Kobe Bryant | 2008 |
NBA Most Valuable Player Award | National Basketball Association | LeBron James | 2009 |
NBA Most Valuable Player Award | National Basketball Association | LeBron James | 2010 |
NBA Most Valuable Player Award | National Basketball Association | LeBron James | 2012 |
NBA Most Valuable Player Award | National Basketball Association | LeBron James | 2013 |
NBA Most Valuable Player Award | National Basketball Association | Stephen Curry | 2015 |
NBA Most Valuable Player Award | National Basketball Association | Stephen Curry | 2016 |
"""

# rivers: name | length km | countries it flows through | mouth
RIVERS = """
Nile | 6650 | Egypt; Kenya | Mediterranean Sea
Amazon River | 6400 | Brazil; Peru; Colombia | Atlantic Ocean
Yangtze | 6300 | China | East China Sea
Mississippi River | 3730 | United States | Gulf of Mexico
Danube | 2850 | Germany; Austria | Black Sea
Rhine | 1230 | Switzerland; Germany; Netherlands; France; Austria | North Sea
Thames | 346 | United Kingdom | North Sea
Seine | 777 | France | English Channel
Volga | 3530 | Russia | Caspian Sea
Ganges | 2525 | India | Bay of Bengal
Mekong | 4909 | China; Vietnam; Thailand | South China Sea
Tagus | 1007 | Spain; Portugal | Atlantic Ocean
"""

# mountains: name | elevation m | countries | first ascent year
MOUNTAINS = """
Mount Everest | 8849 | China | 1953
Aconcagua | 6961 | Argentina | 1897
Denali | 6190 | United States | 1913
Mount Kilimanjaro | 5895 | | 1889
Mont Blanc | 4806 | France; Italy | 1786
Matterhorn | 4478 | Switzerland; Italy | 1865
Mount Fuji | 3776 | Japan | 663
Mount Kenya | 5199 | Kenya | 1899
Zugspitze | 2962 | Germany; Austria | 1820
Mount Kosciuszko | 2228 | Australia | 1840
"""
