// The four Watts–Strogatz graphs of IOS's randwire_large (one per stage), embedded so that the
// zoo reads no files at run time. Format and use: watts_strogatz.h; peers.md §2.4.
//
// Data files from the IOS authors' repository (mit-han-lab/inter-operator-scheduler,
// python/ios/models/randwire_graphs/generated/), reproduced byte for byte under its license:
//
//   MIT License
//
//   Copyright (c) 2021 MIT HAN Lab
//
//   Permission is hereby granted, free of charge, to any person obtaining a copy
//   of this software and associated documentation files (the "Software"), to deal
//   in the Software without restriction, including without limitation the rights
//   to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
//   copies of the Software, and to permit persons to whom the Software is
//   furnished to do so, subject to the following conditions:
//
//   The above copyright notice and this permission notice shall be included in all
//   copies or substantial portions of the Software.
//
//   THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
//   IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
//   FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
//   AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
//   LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
//   OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
//   SOFTWARE.
#include <array>

#include "models/zoo/watts_strogatz.h"

namespace braid::models {
namespace {

// ws-16-4-0.75-2.txt: randwire_large stage 1.
constexpr std::string_view kStage1 = R"(16
32
0 6
0 7
0 9
1 6
1 7
1 15
2 6
2 10
2 11
3 9
3 13
4 6
4 9
4 13
4 14
4 15
5 8
5 10
5 15
6 8
6 9
6 12
7 11
7 15
8 11
9 11
10 14
11 14
12 14
13 14
13 15
14 15
)";

// ws-32-4-0.75-3.txt: randwire_large stage 2.
constexpr std::string_view kStage2 = R"(32
64
0 2
0 13
0 25
0 30
1 8
1 20
1 22
2 3
2 16
2 24
2 30
3 6
3 7
3 26
4 12
4 22
5 15
5 21
5 27
6 11
6 21
6 31
7 8
7 9
7 15
8 23
8 27
9 10
9 11
9 19
10 12
10 30
11 13
11 15
11 17
11 28
12 14
12 26
12 31
13 14
13 16
13 21
13 31
14 16
14 28
14 29
15 19
15 22
16 18
17 18
17 19
18 24
18 31
20 21
20 22
21 23
21 26
22 31
24 31
25 26
26 31
27 29
29 30
29 31
)";

// ws-32-4-0.75-4.txt: randwire_large stage 3.
constexpr std::string_view kStage3 = R"(32
64
0 9
0 11
0 14
0 17
0 31
1 2
1 3
1 31
2 4
2 11
2 12
2 14
2 30
3 4
3 25
4 9
4 20
4 29
5 6
5 27
6 7
6 21
6 27
7 30
7 31
8 10
8 25
9 10
9 14
10 11
10 16
10 22
10 28
11 16
11 24
12 13
12 14
12 15
12 16
13 14
13 22
13 26
14 23
15 29
16 21
17 26
18 19
18 20
19 22
19 27
20 22
22 25
22 30
23 27
24 25
24 26
25 28
26 28
27 28
27 29
28 29
29 30
29 31
30 31
)";

// ws-32-4-0.75-5.txt: randwire_large stage 4.
constexpr std::string_view kStage4 = R"(32
64
0 17
0 20
0 24
1 10
1 22
1 26
1 29
2 19
2 22
2 28
3 6
3 7
3 8
3 9
4 5
4 7
4 26
5 6
5 23
5 24
6 8
7 8
7 11
7 18
7 23
8 11
8 25
9 11
9 19
9 27
9 29
10 12
10 17
10 30
11 14
11 23
11 30
12 13
12 25
12 31
13 16
13 27
13 28
14 24
15 16
15 18
15 21
16 17
16 22
17 21
18 24
19 22
20 23
20 28
20 29
22 25
23 30
24 26
25 28
27 28
27 29
27 30
29 31
30 31
)";

constexpr std::array<EmbeddedWsGraph, 4> kRandWireLargeGraphs = {{
    {"ws-16-4-0.75-2.txt", kStage1},
    {"ws-32-4-0.75-3.txt", kStage2},
    {"ws-32-4-0.75-4.txt", kStage3},
    {"ws-32-4-0.75-5.txt", kStage4},
}};

}  // namespace

std::span<const EmbeddedWsGraph> randwire_large_graphs() {
  return kRandWireLargeGraphs;
}

}  // namespace braid::models
