// Code generated from Unicode's confusables.txt; DO NOT EDIT.

package textsafe

import "unicode"

// The letters outside ASCII whose confusable skeleton (Unicode Technical
// Standard #39, confusables.txt) is one ASCII letter or digit: the
// ASCII they look like, and their script (an index in lookalikeScripts;
// 0 for Latin and Common). The data: confusables.txt 13.0.0 (2020-02-13)
// as github.com/mtibben/confusables (v0.0.0-20210201002637-9d1b0723b659)
// ships it in tables.go, with the changes 17.0.0 (2025-07-22) makes to
// letters of single ASCII skeletons (ϭ ϸ ш ւ ട င ၚ Ⲃ ⲓ ⲩ ⲽ Ⳏ ⳏ added, ӏ
// now l); only letters (the rest are not words: QuoteShaped escapes
// them) but those ReadsASCII reports (fullwidth, mathematical, letterlike),
// and only those Go's unicode tables (Unicode 15.0.0) know. Made by a
// program (not kept) that reads each "source ; target ; MA" line whose
// source is one letter outside ASCII and whose target is one ASCII letter
// or digit, and takes the script from Go's unicode.Scripts;
// TestReview24LookalikeTable checks what it can of it.

// lookalikeScripts are the scripts, other than Latin and Common, with
// letters in lookalikes.
var lookalikeScripts = [...]*unicode.RangeTable{
	nil, // Latin and Common: never read as another script
	unicode.Ahom,
	unicode.Arabic,
	unicode.Armenian,
	unicode.Bamum,
	unicode.Canadian_Aboriginal,
	unicode.Carian,
	unicode.Cherokee,
	unicode.Coptic,
	unicode.Cyrillic,
	unicode.Deseret,
	unicode.Elbasan,
	unicode.Ethiopic,
	unicode.Georgian,
	unicode.Greek,
	unicode.Hebrew,
	unicode.Lisu,
	unicode.Lycian,
	unicode.Malayalam,
	unicode.Miao,
	unicode.Myanmar,
	unicode.Nko,
	unicode.Old_Italic,
	unicode.Oriya,
	unicode.Osage,
	unicode.Runic,
	unicode.Tifinagh,
	unicode.Warang_Citi,
}

// lookalikes, sorted by letter: the letter, the ASCII it looks like, its
// script (lookalikeScripts).
var lookalikes = [...]lookalikeEntry{
	{0x0131, 'i', 0},   // ı Latin
	{0x0184, 'b', 0},   // Ƅ Latin
	{0x018D, 'g', 0},   // ƍ Latin
	{0x0196, 'l', 0},   // Ɩ Latin
	{0x01A6, 'R', 0},   // Ʀ Latin
	{0x01A7, '2', 0},   // Ƨ Latin
	{0x01B7, '3', 0},   // Ʒ Latin
	{0x01BC, '5', 0},   // Ƽ Latin
	{0x01BD, 's', 0},   // ƽ Latin
	{0x01C0, 'l', 0},   // ǀ Latin
	{0x021C, '3', 0},   // Ȝ Latin
	{0x0222, '8', 0},   // Ȣ Latin
	{0x0223, '8', 0},   // ȣ Latin
	{0x0251, 'a', 0},   // ɑ Latin
	{0x0261, 'g', 0},   // ɡ Latin
	{0x0263, 'y', 0},   // ɣ Latin
	{0x0269, 'i', 0},   // ɩ Latin
	{0x026A, 'i', 0},   // ɪ Latin
	{0x026F, 'w', 0},   // ɯ Latin
	{0x028B, 'u', 0},   // ʋ Latin
	{0x028F, 'y', 0},   // ʏ Latin
	{0x037A, 'i', 14},  // ͺ Greek
	{0x037F, 'J', 14},  // Ϳ Greek
	{0x0391, 'A', 14},  // Α Greek
	{0x0392, 'B', 14},  // Β Greek
	{0x0395, 'E', 14},  // Ε Greek
	{0x0396, 'Z', 14},  // Ζ Greek
	{0x0397, 'H', 14},  // Η Greek
	{0x0399, 'l', 14},  // Ι Greek
	{0x039A, 'K', 14},  // Κ Greek
	{0x039C, 'M', 14},  // Μ Greek
	{0x039D, 'N', 14},  // Ν Greek
	{0x039F, 'O', 14},  // Ο Greek
	{0x03A1, 'P', 14},  // Ρ Greek
	{0x03A4, 'T', 14},  // Τ Greek
	{0x03A5, 'Y', 14},  // Υ Greek
	{0x03A7, 'X', 14},  // Χ Greek
	{0x03B1, 'a', 14},  // α Greek
	{0x03B3, 'y', 14},  // γ Greek
	{0x03B9, 'i', 14},  // ι Greek
	{0x03BD, 'v', 14},  // ν Greek
	{0x03BF, 'o', 14},  // ο Greek
	{0x03C1, 'p', 14},  // ρ Greek
	{0x03C3, 'o', 14},  // σ Greek
	{0x03C5, 'u', 14},  // υ Greek
	{0x03D2, 'Y', 14},  // ϒ Greek
	{0x03DC, 'F', 14},  // Ϝ Greek
	{0x03E8, '2', 8},   // Ϩ Coptic
	{0x03ED, 'o', 8},   // ϭ Coptic
	{0x03F1, 'p', 14},  // ϱ Greek
	{0x03F2, 'c', 14},  // ϲ Greek
	{0x03F3, 'j', 14},  // ϳ Greek
	{0x03F8, 'p', 14},  // ϸ Greek
	{0x03F9, 'C', 14},  // Ϲ Greek
	{0x03FA, 'M', 14},  // Ϻ Greek
	{0x0405, 'S', 9},   // Ѕ Cyrillic
	{0x0406, 'l', 9},   // І Cyrillic
	{0x0408, 'J', 9},   // Ј Cyrillic
	{0x0410, 'A', 9},   // А Cyrillic
	{0x0412, 'B', 9},   // В Cyrillic
	{0x0415, 'E', 9},   // Е Cyrillic
	{0x0417, '3', 9},   // З Cyrillic
	{0x041A, 'K', 9},   // К Cyrillic
	{0x041C, 'M', 9},   // М Cyrillic
	{0x041D, 'H', 9},   // Н Cyrillic
	{0x041E, 'O', 9},   // О Cyrillic
	{0x0420, 'P', 9},   // Р Cyrillic
	{0x0421, 'C', 9},   // С Cyrillic
	{0x0422, 'T', 9},   // Т Cyrillic
	{0x0423, 'Y', 9},   // У Cyrillic
	{0x0425, 'X', 9},   // Х Cyrillic
	{0x042C, 'b', 9},   // Ь Cyrillic
	{0x0430, 'a', 9},   // а Cyrillic
	{0x0431, '6', 9},   // б Cyrillic
	{0x0433, 'r', 9},   // г Cyrillic
	{0x0435, 'e', 9},   // е Cyrillic
	{0x043E, 'o', 9},   // о Cyrillic
	{0x0440, 'p', 9},   // р Cyrillic
	{0x0441, 'c', 9},   // с Cyrillic
	{0x0443, 'y', 9},   // у Cyrillic
	{0x0445, 'x', 9},   // х Cyrillic
	{0x0448, 'w', 9},   // ш Cyrillic
	{0x0455, 's', 9},   // ѕ Cyrillic
	{0x0456, 'i', 9},   // і Cyrillic
	{0x0458, 'j', 9},   // ј Cyrillic
	{0x0461, 'w', 9},   // ѡ Cyrillic
	{0x0474, 'V', 9},   // Ѵ Cyrillic
	{0x0475, 'v', 9},   // ѵ Cyrillic
	{0x04AE, 'Y', 9},   // Ү Cyrillic
	{0x04AF, 'y', 9},   // ү Cyrillic
	{0x04BB, 'h', 9},   // һ Cyrillic
	{0x04BD, 'e', 9},   // ҽ Cyrillic
	{0x04C0, 'l', 9},   // Ӏ Cyrillic
	{0x04CF, 'l', 9},   // ӏ Cyrillic
	{0x04E0, '3', 9},   // Ӡ Cyrillic
	{0x0501, 'd', 9},   // ԁ Cyrillic
	{0x050C, 'G', 9},   // Ԍ Cyrillic
	{0x051B, 'q', 9},   // ԛ Cyrillic
	{0x051C, 'W', 9},   // Ԝ Cyrillic
	{0x051D, 'w', 9},   // ԝ Cyrillic
	{0x054D, 'U', 3},   // Ս Armenian
	{0x054F, 'S', 3},   // Տ Armenian
	{0x0555, 'O', 3},   // Օ Armenian
	{0x0561, 'w', 3},   // ա Armenian
	{0x0563, 'q', 3},   // գ Armenian
	{0x0566, 'q', 3},   // զ Armenian
	{0x0570, 'h', 3},   // հ Armenian
	{0x0578, 'n', 3},   // ո Armenian
	{0x057C, 'n', 3},   // ռ Armenian
	{0x057D, 'u', 3},   // ս Armenian
	{0x0581, 'g', 3},   // ց Armenian
	{0x0582, 'i', 3},   // ւ Armenian
	{0x0584, 'f', 3},   // ք Armenian
	{0x0585, 'o', 3},   // օ Armenian
	{0x05D5, 'l', 15},  // ו Hebrew
	{0x05D8, 'v', 15},  // ט Hebrew
	{0x05DF, 'l', 15},  // ן Hebrew
	{0x05E1, 'o', 15},  // ס Hebrew
	{0x0627, 'l', 2},   // ا Arabic
	{0x0647, 'o', 2},   // ه Arabic
	{0x06BE, 'o', 2},   // ھ Arabic
	{0x06C1, 'o', 2},   // ہ Arabic
	{0x06D5, 'o', 2},   // ە Arabic
	{0x07CA, 'l', 21},  // ߊ Nko
	{0x0B20, 'O', 23},  // ଠ Oriya
	{0x0D1F, 's', 18},  // ട Malayalam
	{0x0D20, 'o', 18},  // ഠ Malayalam
	{0x1004, 'c', 20},  // င Myanmar
	{0x101D, 'o', 20},  // ဝ Myanmar
	{0x105A, 'c', 20},  // ၚ Myanmar
	{0x10E7, 'y', 13},  // ყ Georgian
	{0x10FF, 'o', 13},  // ჿ Georgian
	{0x1200, 'U', 12},  // ሀ Ethiopic
	{0x12D0, 'O', 12},  // ዐ Ethiopic
	{0x13A0, 'D', 7},   // Ꭰ Cherokee
	{0x13A1, 'R', 7},   // Ꭱ Cherokee
	{0x13A2, 'T', 7},   // Ꭲ Cherokee
	{0x13A5, 'i', 7},   // Ꭵ Cherokee
	{0x13A9, 'Y', 7},   // Ꭹ Cherokee
	{0x13AA, 'A', 7},   // Ꭺ Cherokee
	{0x13AB, 'J', 7},   // Ꭻ Cherokee
	{0x13AC, 'E', 7},   // Ꭼ Cherokee
	{0x13B3, 'W', 7},   // Ꮃ Cherokee
	{0x13B7, 'M', 7},   // Ꮇ Cherokee
	{0x13BB, 'H', 7},   // Ꮋ Cherokee
	{0x13BD, 'Y', 7},   // Ꮍ Cherokee
	{0x13C0, 'G', 7},   // Ꮐ Cherokee
	{0x13C2, 'h', 7},   // Ꮒ Cherokee
	{0x13C3, 'Z', 7},   // Ꮓ Cherokee
	{0x13CE, '4', 7},   // Ꮞ Cherokee
	{0x13CF, 'b', 7},   // Ꮟ Cherokee
	{0x13D2, 'R', 7},   // Ꮢ Cherokee
	{0x13D4, 'W', 7},   // Ꮤ Cherokee
	{0x13D5, 'S', 7},   // Ꮥ Cherokee
	{0x13D9, 'V', 7},   // Ꮩ Cherokee
	{0x13DA, 'S', 7},   // Ꮪ Cherokee
	{0x13DE, 'L', 7},   // Ꮮ Cherokee
	{0x13DF, 'C', 7},   // Ꮯ Cherokee
	{0x13E2, 'P', 7},   // Ꮲ Cherokee
	{0x13E6, 'K', 7},   // Ꮶ Cherokee
	{0x13E7, 'd', 7},   // Ꮷ Cherokee
	{0x13EE, '6', 7},   // Ꮾ Cherokee
	{0x13F3, 'G', 7},   // Ᏻ Cherokee
	{0x13F4, 'B', 7},   // Ᏼ Cherokee
	{0x142F, 'V', 5},   // ᐯ Canadian_Aboriginal
	{0x144C, 'U', 5},   // ᑌ Canadian_Aboriginal
	{0x146D, 'P', 5},   // ᑭ Canadian_Aboriginal
	{0x146F, 'd', 5},   // ᑯ Canadian_Aboriginal
	{0x1472, 'b', 5},   // ᑲ Canadian_Aboriginal
	{0x148D, 'J', 5},   // ᒍ Canadian_Aboriginal
	{0x14AA, 'L', 5},   // ᒪ Canadian_Aboriginal
	{0x14BF, '2', 5},   // ᒿ Canadian_Aboriginal
	{0x1541, 'x', 5},   // ᕁ Canadian_Aboriginal
	{0x157C, 'H', 5},   // ᕼ Canadian_Aboriginal
	{0x157D, 'x', 5},   // ᕽ Canadian_Aboriginal
	{0x1587, 'R', 5},   // ᖇ Canadian_Aboriginal
	{0x15AF, 'b', 5},   // ᖯ Canadian_Aboriginal
	{0x15B4, 'F', 5},   // ᖴ Canadian_Aboriginal
	{0x15C5, 'A', 5},   // ᗅ Canadian_Aboriginal
	{0x15DE, 'D', 5},   // ᗞ Canadian_Aboriginal
	{0x15EA, 'D', 5},   // ᗪ Canadian_Aboriginal
	{0x15F0, 'M', 5},   // ᗰ Canadian_Aboriginal
	{0x15F7, 'B', 5},   // ᗷ Canadian_Aboriginal
	{0x16B7, 'X', 25},  // ᚷ Runic
	{0x16C1, 'l', 25},  // ᛁ Runic
	{0x16D5, 'K', 25},  // ᛕ Runic
	{0x16D6, 'M', 25},  // ᛖ Runic
	{0x1D04, 'c', 0},   // ᴄ Latin
	{0x1D0F, 'o', 0},   // ᴏ Latin
	{0x1D11, 'o', 0},   // ᴑ Latin
	{0x1D1C, 'u', 0},   // ᴜ Latin
	{0x1D20, 'v', 0},   // ᴠ Latin
	{0x1D21, 'w', 0},   // ᴡ Latin
	{0x1D22, 'z', 0},   // ᴢ Latin
	{0x1D26, 'r', 14},  // ᴦ Greek
	{0x1D83, 'g', 0},   // ᶃ Latin
	{0x1D8C, 'y', 0},   // ᶌ Latin
	{0x1E9D, 'f', 0},   // ẝ Latin
	{0x1EFF, 'y', 0},   // ỿ Latin
	{0x1FBE, 'i', 14},  // ι Greek
	{0x2C82, 'B', 8},   // Ⲃ Coptic
	{0x2C85, 'r', 8},   // ⲅ Coptic
	{0x2C8E, 'H', 8},   // Ⲏ Coptic
	{0x2C92, 'l', 8},   // Ⲓ Coptic
	{0x2C93, 'i', 8},   // ⲓ Coptic
	{0x2C94, 'K', 8},   // Ⲕ Coptic
	{0x2C98, 'M', 8},   // Ⲙ Coptic
	{0x2C9A, 'N', 8},   // Ⲛ Coptic
	{0x2C9E, 'O', 8},   // Ⲟ Coptic
	{0x2C9F, 'o', 8},   // ⲟ Coptic
	{0x2CA2, 'P', 8},   // Ⲣ Coptic
	{0x2CA3, 'p', 8},   // ⲣ Coptic
	{0x2CA4, 'C', 8},   // Ⲥ Coptic
	{0x2CA5, 'c', 8},   // ⲥ Coptic
	{0x2CA6, 'T', 8},   // Ⲧ Coptic
	{0x2CA8, 'Y', 8},   // Ⲩ Coptic
	{0x2CA9, 'y', 8},   // ⲩ Coptic
	{0x2CAC, 'X', 8},   // Ⲭ Coptic
	{0x2CBD, 'w', 8},   // ⲽ Coptic
	{0x2CCA, '9', 8},   // Ⳋ Coptic
	{0x2CCC, '3', 8},   // Ⳍ Coptic
	{0x2CCE, 'P', 8},   // Ⳏ Coptic
	{0x2CCF, 'p', 8},   // ⳏ Coptic
	{0x2CD0, 'L', 8},   // Ⳑ Coptic
	{0x2CD2, '6', 8},   // Ⳓ Coptic
	{0x2D38, 'V', 26},  // ⴸ Tifinagh
	{0x2D39, 'E', 26},  // ⴹ Tifinagh
	{0x2D4F, 'l', 26},  // ⵏ Tifinagh
	{0x2D54, 'O', 26},  // ⵔ Tifinagh
	{0x2D55, 'Q', 26},  // ⵕ Tifinagh
	{0x2D5D, 'X', 26},  // ⵝ Tifinagh
	{0xA4D0, 'B', 16},  // ꓐ Lisu
	{0xA4D1, 'P', 16},  // ꓑ Lisu
	{0xA4D2, 'd', 16},  // ꓒ Lisu
	{0xA4D3, 'D', 16},  // ꓓ Lisu
	{0xA4D4, 'T', 16},  // ꓔ Lisu
	{0xA4D6, 'G', 16},  // ꓖ Lisu
	{0xA4D7, 'K', 16},  // ꓗ Lisu
	{0xA4D9, 'J', 16},  // ꓙ Lisu
	{0xA4DA, 'C', 16},  // ꓚ Lisu
	{0xA4DC, 'Z', 16},  // ꓜ Lisu
	{0xA4DD, 'F', 16},  // ꓝ Lisu
	{0xA4DF, 'M', 16},  // ꓟ Lisu
	{0xA4E0, 'N', 16},  // ꓠ Lisu
	{0xA4E1, 'L', 16},  // ꓡ Lisu
	{0xA4E2, 'S', 16},  // ꓢ Lisu
	{0xA4E3, 'R', 16},  // ꓣ Lisu
	{0xA4E6, 'V', 16},  // ꓦ Lisu
	{0xA4E7, 'H', 16},  // ꓧ Lisu
	{0xA4EA, 'W', 16},  // ꓪ Lisu
	{0xA4EB, 'X', 16},  // ꓫ Lisu
	{0xA4EC, 'Y', 16},  // ꓬ Lisu
	{0xA4EE, 'A', 16},  // ꓮ Lisu
	{0xA4F0, 'E', 16},  // ꓰ Lisu
	{0xA4F2, 'l', 16},  // ꓲ Lisu
	{0xA4F3, 'O', 16},  // ꓳ Lisu
	{0xA4F4, 'U', 16},  // ꓴ Lisu
	{0xA644, '2', 9},   // Ꙅ Cyrillic
	{0xA647, 'i', 9},   // ꙇ Cyrillic
	{0xA6DF, 'V', 4},   // ꛟ Bamum
	{0xA731, 's', 0},   // ꜱ Latin
	{0xA75A, '2', 0},   // Ꝛ Latin
	{0xA76A, '3', 0},   // Ꝫ Latin
	{0xA76E, '9', 0},   // Ꝯ Latin
	{0xA798, 'F', 0},   // Ꞙ Latin
	{0xA799, 'f', 0},   // ꞙ Latin
	{0xA79F, 'u', 0},   // ꞟ Latin
	{0xA7AB, '3', 0},   // Ɜ Latin
	{0xA7B2, 'J', 0},   // Ʝ Latin
	{0xA7B3, 'X', 0},   // Ꭓ Latin
	{0xA7B4, 'B', 0},   // Ꞵ Latin
	{0xAB32, 'e', 0},   // ꬲ Latin
	{0xAB35, 'f', 0},   // ꬵ Latin
	{0xAB3D, 'o', 0},   // ꬽ Latin
	{0xAB47, 'r', 0},   // ꭇ Latin
	{0xAB48, 'r', 0},   // ꭈ Latin
	{0xAB4E, 'u', 0},   // ꭎ Latin
	{0xAB52, 'u', 0},   // ꭒ Latin
	{0xAB5A, 'y', 0},   // ꭚ Latin
	{0xAB75, 'i', 7},   // ꭵ Cherokee
	{0xAB81, 'r', 7},   // ꮁ Cherokee
	{0xAB83, 'w', 7},   // ꮃ Cherokee
	{0xAB93, 'z', 7},   // ꮓ Cherokee
	{0xABA9, 'v', 7},   // ꮩ Cherokee
	{0xABAA, 's', 7},   // ꮪ Cherokee
	{0xABAF, 'c', 7},   // ꮯ Cherokee
	{0xFBA6, 'o', 2},   // ﮦ Arabic
	{0xFBA7, 'o', 2},   // ﮧ Arabic
	{0xFBA8, 'o', 2},   // ﮨ Arabic
	{0xFBA9, 'o', 2},   // ﮩ Arabic
	{0xFBAA, 'o', 2},   // ﮪ Arabic
	{0xFBAB, 'o', 2},   // ﮫ Arabic
	{0xFBAC, 'o', 2},   // ﮬ Arabic
	{0xFBAD, 'o', 2},   // ﮭ Arabic
	{0xFE8D, 'l', 2},   // ﺍ Arabic
	{0xFE8E, 'l', 2},   // ﺎ Arabic
	{0xFEE9, 'o', 2},   // ﻩ Arabic
	{0xFEEA, 'o', 2},   // ﻪ Arabic
	{0xFEEB, 'o', 2},   // ﻫ Arabic
	{0xFEEC, 'o', 2},   // ﻬ Arabic
	{0x10282, 'B', 17}, // 𐊂 Lycian
	{0x10286, 'E', 17}, // 𐊆 Lycian
	{0x10287, 'F', 17}, // 𐊇 Lycian
	{0x1028A, 'l', 17}, // 𐊊 Lycian
	{0x10290, 'X', 17}, // 𐊐 Lycian
	{0x10292, 'O', 17}, // 𐊒 Lycian
	{0x10295, 'P', 17}, // 𐊕 Lycian
	{0x10296, 'S', 17}, // 𐊖 Lycian
	{0x10297, 'T', 17}, // 𐊗 Lycian
	{0x102A0, 'A', 6},  // 𐊠 Carian
	{0x102A1, 'B', 6},  // 𐊡 Carian
	{0x102A2, 'C', 6},  // 𐊢 Carian
	{0x102A5, 'F', 6},  // 𐊥 Carian
	{0x102AB, 'O', 6},  // 𐊫 Carian
	{0x102B0, 'M', 6},  // 𐊰 Carian
	{0x102B1, 'T', 6},  // 𐊱 Carian
	{0x102B2, 'Y', 6},  // 𐊲 Carian
	{0x102B4, 'X', 6},  // 𐊴 Carian
	{0x102CF, 'H', 6},  // 𐋏 Carian
	{0x10301, 'B', 22}, // 𐌁 Old_Italic
	{0x10302, 'C', 22}, // 𐌂 Old_Italic
	{0x10309, 'l', 22}, // 𐌉 Old_Italic
	{0x10311, 'M', 22}, // 𐌑 Old_Italic
	{0x10315, 'T', 22}, // 𐌕 Old_Italic
	{0x10317, 'X', 22}, // 𐌗 Old_Italic
	{0x1031A, '8', 22}, // 𐌚 Old_Italic
	{0x10404, 'O', 10}, // 𐐄 Deseret
	{0x10415, 'C', 10}, // 𐐕 Deseret
	{0x1041B, 'L', 10}, // 𐐛 Deseret
	{0x10420, 'S', 10}, // 𐐠 Deseret
	{0x1042C, 'o', 10}, // 𐐬 Deseret
	{0x1043D, 'c', 10}, // 𐐽 Deseret
	{0x10448, 's', 10}, // 𐑈 Deseret
	{0x104B4, 'R', 24}, // 𐒴 Osage
	{0x104C2, 'O', 24}, // 𐓂 Osage
	{0x104CE, 'U', 24}, // 𐓎 Osage
	{0x104D2, '7', 24}, // 𐓒 Osage
	{0x104EA, 'o', 24}, // 𐓪 Osage
	{0x104F6, 'u', 24}, // 𐓶 Osage
	{0x10513, 'N', 11}, // 𐔓 Elbasan
	{0x10516, 'O', 11}, // 𐔖 Elbasan
	{0x10518, 'K', 11}, // 𐔘 Elbasan
	{0x1051C, 'C', 11}, // 𐔜 Elbasan
	{0x1051D, 'V', 11}, // 𐔝 Elbasan
	{0x10525, 'F', 11}, // 𐔥 Elbasan
	{0x10526, 'L', 11}, // 𐔦 Elbasan
	{0x10527, 'X', 11}, // 𐔧 Elbasan
	{0x11706, 'v', 1},  // 𑜆 Ahom
	{0x1170A, 'w', 1},  // 𑜊 Ahom
	{0x1170E, 'w', 1},  // 𑜎 Ahom
	{0x1170F, 'w', 1},  // 𑜏 Ahom
	{0x118A0, 'V', 27}, // 𑢠 Warang_Citi
	{0x118A2, 'F', 27}, // 𑢢 Warang_Citi
	{0x118A3, 'L', 27}, // 𑢣 Warang_Citi
	{0x118A4, 'Y', 27}, // 𑢤 Warang_Citi
	{0x118A6, 'E', 27}, // 𑢦 Warang_Citi
	{0x118A9, 'Z', 27}, // 𑢩 Warang_Citi
	{0x118AC, '9', 27}, // 𑢬 Warang_Citi
	{0x118AE, 'E', 27}, // 𑢮 Warang_Citi
	{0x118AF, '4', 27}, // 𑢯 Warang_Citi
	{0x118B2, 'L', 27}, // 𑢲 Warang_Citi
	{0x118B5, 'O', 27}, // 𑢵 Warang_Citi
	{0x118B8, 'U', 27}, // 𑢸 Warang_Citi
	{0x118BB, '5', 27}, // 𑢻 Warang_Citi
	{0x118BC, 'T', 27}, // 𑢼 Warang_Citi
	{0x118C0, 'v', 27}, // 𑣀 Warang_Citi
	{0x118C1, 's', 27}, // 𑣁 Warang_Citi
	{0x118C2, 'F', 27}, // 𑣂 Warang_Citi
	{0x118C3, 'i', 27}, // 𑣃 Warang_Citi
	{0x118C4, 'z', 27}, // 𑣄 Warang_Citi
	{0x118C6, '7', 27}, // 𑣆 Warang_Citi
	{0x118C8, 'o', 27}, // 𑣈 Warang_Citi
	{0x118CA, '3', 27}, // 𑣊 Warang_Citi
	{0x118CC, '9', 27}, // 𑣌 Warang_Citi
	{0x118D5, '6', 27}, // 𑣕 Warang_Citi
	{0x118D6, '9', 27}, // 𑣖 Warang_Citi
	{0x118D7, 'o', 27}, // 𑣗 Warang_Citi
	{0x118D8, 'u', 27}, // 𑣘 Warang_Citi
	{0x118DC, 'y', 27}, // 𑣜 Warang_Citi
	{0x16F08, 'V', 19}, // 𖼈 Miao
	{0x16F0A, 'T', 19}, // 𖼊 Miao
	{0x16F16, 'L', 19}, // 𖼖 Miao
	{0x16F28, 'l', 19}, // 𖼨 Miao
	{0x16F35, 'R', 19}, // 𖼵 Miao
	{0x16F3A, 'S', 19}, // 𖼺 Miao
	{0x16F3B, '3', 19}, // 𖼻 Miao
	{0x16F40, 'A', 19}, // 𖽀 Miao
	{0x16F42, 'U', 19}, // 𖽂 Miao
	{0x16F43, 'Y', 19}, // 𖽃 Miao
	{0x1EE00, 'l', 2},  // 𞸀 Arabic
	{0x1EE24, 'o', 2},  // 𞸤 Arabic
	{0x1EE64, 'o', 2},  // 𞹤 Arabic
	{0x1EE80, 'l', 2},  // 𞺀 Arabic
	{0x1EE84, 'o', 2},  // 𞺄 Arabic
}
